package trackerhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// answer is one scripted response.
type answer struct {
	status int
	header map[string]string
	body   string
}

// script serves its answers in order (the last one repeats) and records
// the fake time of every request it received.
type script struct {
	t       *testing.T
	ft      *fakeTime
	mu      sync.Mutex
	answers []answer
	at      []time.Time
}

func newScript(t *testing.T, ft *fakeTime, answers ...answer) (*script, *httptest.Server) {
	s := &script{t: t, ft: ft, answers: answers}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

func (s *script) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	i := min(len(s.at), len(s.answers)-1)
	s.at = append(s.at, s.ft.Now())
	a := s.answers[i]
	s.mu.Unlock()
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

func (s *script) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.at)
}

func (s *script) times() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.at)
}

// do sends one GET and returns its status, or 0 and the error.
func do(t *testing.T, c *http.Client, url string) (int, http.Header, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "token t")
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header, nil
}

const secondaryBody = `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`

// GitHub's secondary limit without Retry-After, quota left, and the
// primary window's reset an hour away: the transport waits a minute (not the
// hour, not a second), then holds every request for the credentials for two
// minutes without sending it, and only then tries again.
func TestGitHubSecondaryLimitHoldsAMinuteDoubling(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusForbidden, http.StatusTooManyRequests} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			ft := newFakeTime()
			limited := answer{status: status, body: secondaryBody, header: map[string]string{
				"X-RateLimit-Remaining": "4990",
				"X-RateLimit-Reset":     strconv.FormatInt(ft.Now().Add(time.Hour).Unix(), 10),
			}}
			s, srv := newScript(t, ft, limited, limited, limited, answer{status: 200, header: map[string]string{"X-RateLimit-Remaining": "4989"}})
			opts := ft.options()
			opts.RateLimits = GitHubRateLimits
			c := client(opts)

			code, h, err := do(t, c, srv.URL)
			if err != nil || code != status {
				t.Fatalf("first call: %d %v", code, err)
			}
			if got := ft.Sleeps(); !slices.Equal(got, []time.Duration{time.Minute}) {
				t.Fatalf("sleeps %v, want one minute before the single retry", got)
			}
			if n := s.requests(); n != 2 {
				t.Fatalf("requests sent = %d, want 2 (the first and one retry a minute later)", n)
			}
			if h.Get("Retry-After") != "120" {
				t.Errorf("Retry-After handed to the SDK = %q, want the 120 s hold", h.Get("Retry-After"))
			}
			for range 5 {
				if _, _, err := do(t, c, srv.URL+"/other"); !errors.Is(err, ErrRateLimited) {
					t.Fatalf("during the hold: err = %v, want ErrRateLimited", err)
				}
			}
			if n := s.requests(); n != 2 {
				t.Fatalf("requests sent during the hold = %d, want none", n-2)
			}
			ft.Sleep(context.Background(), 2*time.Minute)
			if code, _, err := do(t, c, srv.URL); err != nil || code != status {
				t.Fatalf("after the hold: %d %v", code, err)
			}
			// Third limit in a row: four minutes, beyond MaxWait, so no retry.
			if _, _, err := do(t, c, srv.URL); !errors.Is(err, ErrRateLimited) {
				t.Fatalf("err = %v, want ErrRateLimited for the 4-minute hold", err)
			}
			ft.Sleep(context.Background(), 4*time.Minute)
			if code, _, err := do(t, c, srv.URL); err != nil || code != 200 {
				t.Fatalf("after the second hold: %d %v", code, err)
			}
			at := s.times()
			if len(at) != 4 {
				t.Fatalf("requests = %d, want 4", len(at))
			}
			for i, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute} {
				if gap := at[i+1].Sub(at[i]); gap < want {
					t.Errorf("gap %d = %v, want ≥ %v", i, gap, want)
				}
			}
		})
	}
}

// A 403 that is no rate limit (missing permission) is not retried or held.
func TestGitHubForbiddenWithoutLimitIsAnAnswer(t *testing.T) {
	t.Parallel()
	ft := newFakeTime()
	s, srv := newScript(t, ft, answer{status: 403, body: `{"message":"Resource not accessible by integration"}`,
		header: map[string]string{"X-RateLimit-Remaining": "4999"}})
	opts := ft.options()
	opts.RateLimits = GitHubRateLimits
	c := client(opts)
	for range 2 {
		if code, _, err := do(t, c, srv.URL); err != nil || code != 403 {
			t.Fatalf("%d %v", code, err)
		}
	}
	if s.requests() != 2 || len(ft.Sleeps()) != 0 {
		t.Fatalf("requests %d sleeps %v", s.requests(), ft.Sleeps())
	}
}

// GitLab's bare 429 (no RateLimit-*, no Retry-After, gitlab-org/gitlab#365728)
// holds the credentials for a minute; its RateLimit-Remaining 0 on a 200
// holds until RateLimit-Reset; and RateLimit-ResetTime (HTTP date) is read
// when RateLimit-Reset is missing.
func TestGitLabRateLimitHeaders(t *testing.T) {
	t.Parallel()
	ft := newFakeTime()
	reset := ft.Now().Add(30 * time.Second)
	s, srv := newScript(t, ft,
		answer{status: 429, body: "Retry later\n"},
		answer{status: 200, header: map[string]string{"RateLimit-Remaining": "0", "RateLimit-Reset": strconv.FormatInt(reset.Add(time.Minute).Unix(), 10)}},
		answer{status: 429, header: map[string]string{"RateLimit-ResetTime": reset.Add(2 * time.Minute).UTC().Format(http.TimeFormat)}},
		answer{status: 200, header: map[string]string{"RateLimit-Remaining": "1999"}},
	)
	opts := ft.options()
	opts.RateLimits = GitLabRateLimits
	c := client(opts)
	if code, _, err := do(t, c, srv.URL); err != nil || code != 200 {
		t.Fatalf("first: %d %v", code, err)
	}
	if got := ft.Sleeps(); !slices.Equal(got, []time.Duration{time.Minute}) {
		t.Fatalf("sleeps after a bare 429 = %v, want [1m0s]", got)
	}
	// Remaining 0 until reset+1m = 30 s from now.
	if code, _, err := do(t, c, srv.URL); err != nil || code != 200 {
		t.Fatalf("second: %d %v", code, err)
	}
	at := s.times()
	if len(at) != 4 {
		t.Fatalf("requests = %d, want 4", len(at))
	}
	if gap := at[2].Sub(at[1]); gap != 30*time.Second {
		t.Errorf("held %v after RateLimit-Remaining 0, want 30s (RateLimit-Reset)", gap)
	}
	if gap := at[3].Sub(at[2]); gap != time.Minute {
		t.Errorf("waited %v after a 429 with RateLimit-ResetTime, want 1m0s", gap)
	}
}

// Azure DevOps delays requests over its budget and says so with
// X-RateLimit-Remaining 0 on a 200 and a reset minutes away: the transport
// spaces requests by the imposed delay and never refuses or holds them for
// minutes.
func TestAzureDevOpsDelayedAnswersSlowDown(t *testing.T) {
	t.Parallel()
	ft := newFakeTime()
	delayed := answer{status: 200, header: map[string]string{
		"X-RateLimit-Resource": "ATCPU", "X-RateLimit-Delay": "1.5", "X-RateLimit-Limit": "200",
		"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(ft.Now().Add(5*time.Minute).Unix(), 10),
	}}
	s, srv := newScript(t, ft, delayed, delayed, delayed, delayed, answer{status: 200}, answer{status: 200})
	opts := ft.options()
	opts.RateLimits = AzureDevOpsRateLimits
	c := client(opts)
	for i := range 6 {
		if code, _, err := do(t, c, srv.URL); err != nil || code != 200 {
			t.Fatalf("request %d: %d %v", i, code, err)
		}
	}
	want := []time.Duration{1500 * time.Millisecond, 1500 * time.Millisecond, 1500 * time.Millisecond, 1500 * time.Millisecond}
	if got := ft.Sleeps(); !slices.Equal(got, want) {
		t.Fatalf("sleeps = %v, want %v (one delay before each request after a delayed answer, none after it ended)", got, want)
	}
	if s.requests() != 6 {
		t.Fatalf("requests = %d, want 6", s.requests())
	}
}

// The pace is bounded: a 30 s delay (ADO's maximum) spaces requests by 5 s.
func TestAzureDevOpsPaceIsBounded(t *testing.T) {
	t.Parallel()
	p := AzureDevOpsRateLimits.withDefaults()
	for v, want := range map[string]time.Duration{"30": 5 * time.Second, "0.001": 250 * time.Millisecond, "": 250 * time.Millisecond, "junk": 250 * time.Millisecond, "1e300": 250 * time.Millisecond} {
		if got := p.paceOf(http.Header{"X-Ratelimit-Delay": {v}}); got != want {
			t.Errorf("pace for delay %q = %v, want %v", v, got, want)
		}
	}
}

// Jira: a 429 that names its reset only as an ISO 8601 minute is waited
// until then; a 503 with Retry-After is retried after it; a 503 without is
// an answer; a bare 429 waits 10 s, then 20 s, then 30 s.
func TestJiraResetAnd503(t *testing.T) {
	t.Parallel()
	ft := newFakeTime() // 2023-11-14T22:13:20Z
	s, srv := newScript(t, ft,
		answer{status: 429, header: map[string]string{"X-RateLimit-Reset": "2023-11-14T22:13Z"}},
		answer{status: 503, header: map[string]string{"Retry-After": "3"}},
		answer{status: 200},
		answer{status: 503},
		answer{status: 429}, answer{status: 429}, answer{status: 429}, answer{status: 200},
	)
	opts := ft.options()
	opts.RateLimits = JiraRateLimits
	c := client(opts)
	if code, _, err := do(t, c, srv.URL); err != nil || code != 200 {
		t.Fatalf("first: %d %v", code, err)
	}
	if got := ft.Sleeps(); !slices.Equal(got, []time.Duration{40 * time.Second, 3 * time.Second}) {
		t.Fatalf("sleeps = %v, want [40s 3s]", got)
	}
	if code, _, err := do(t, c, srv.URL); err != nil || code != 503 {
		t.Fatalf("503 without Retry-After: %d %v", code, err)
	}
	if code, _, err := do(t, c, srv.URL); err != nil || code != 200 {
		t.Fatalf("bare 429s: %d %v", code, err)
	}
	if got := ft.Sleeps()[2:]; !slices.Equal(got, []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second}) {
		t.Fatalf("sleeps after bare 429s = %v, want [10s 20s 30s]", got)
	}
	if s.requests() != 8 {
		t.Fatalf("requests = %d, want 8", s.requests())
	}
}

func TestParseISO8601(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]string{
		"2024-05-06T12:35Z":         "2024-05-06T12:36:00Z", // the minute's end
		"2024-05-06T12:35+0200":     "2024-05-06T10:36:00Z",
		"2024-05-06T12:35:07.5Z":    "2024-05-06T12:35:07Z",
		"2024-05-06T12:35:07+02:00": "2024-05-06T10:35:07Z",
	} {
		got, ok := parseISO8601(v)
		if !ok || got.UTC().Format(time.RFC3339) != want {
			t.Errorf("parseISO8601(%q) = %v %v, want %s", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "tomorrow", "1700000000"} {
		if _, ok := parseISO8601(v); ok {
			t.Errorf("parseISO8601(%q) accepted", v)
		}
	}
}

// A hold longer than the time left before the request's deadline fails
// fast instead of sleeping into a timeout.
func TestHoldBeyondDeadlineFailsFast(t *testing.T) {
	t.Parallel()
	ft := newFakeTime()
	s, srv := newScript(t, ft, answer{status: 429, body: secondaryBody})
	opts := ft.options()
	opts.RateLimits = GitHubRateLimits
	c := client(opts)
	c.Timeout = 30 * time.Second
	if code, _, err := do(t, c, srv.URL); err != nil || code != 429 {
		t.Fatalf("%d %v", code, err)
	}
	if _, _, err := do(t, c, srv.URL); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("err = %v, want ErrRateLimited", err)
	}
	if s.requests() != 1 || len(ft.Sleeps()) != 0 {
		t.Fatalf("requests %d sleeps %v, want 1 and none", s.requests(), ft.Sleeps())
	}
}

func TestBackoffAfter(t *testing.T) {
	t.Parallel()
	b := Backoff{Initial: time.Minute, Max: 16 * time.Minute}
	var got []time.Duration
	for n := range 7 {
		got = append(got, b.after(n))
	}
	want := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 16 * time.Minute, 16 * time.Minute}
	if !slices.Equal(got, want) {
		t.Fatalf("after = %v, want %v", got, want)
	}
	if d := b.after(1 << 30); d != 16*time.Minute {
		t.Fatalf("after(huge) = %v", d)
	}
}

// GitHub's three budgets are told apart by path: GraphQL's (github.com's
// and GitHub Enterprise Server's endpoint) and search's are not core's.
func TestGitHubResource(t *testing.T) {
	for path, want := range map[string]string{
		"https://api.github.com/graphql":                "graphql",
		"https://ghe.example/api/graphql":               "graphql",
		"http://127.0.0.1:1/github/graphql":             "graphql",
		"https://api.github.com/search/issues":          "search",
		"https://ghe.example/api/v3/search/issues":      "search",
		"https://api.github.com/repos/o/r/issues/1":     "core",
		"https://api.github.com/repos/o/r/labels/graph": "core",
	} {
		req, err := http.NewRequest(http.MethodPost, path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := GitHubResource(req); got != want {
			t.Errorf("GitHubResource(%s) = %q, want %q", path, got, want)
		}
	}
	// Only a POST is GraphQL: a GET of a path ending in /graphql is a REST
	// read (a user or an organisation named graphql), and so is any
	// request under /repos/ or /users/.
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "https://api.github.com/graphql"},
		{http.MethodGet, "https://api.github.com/users/graphql"},
		{http.MethodPost, "https://api.github.com/repos/o/r/labels/graphql"},
		{http.MethodPost, "https://api.github.com/orgs/graphql"},
	} {
		req, err := http.NewRequest(c.method, c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := GitHubResource(req); got != "core" {
			t.Errorf("GitHubResource(%s %s) = %q, want core", c.method, c.path, got)
		}
	}
}

// What each GitHub request spends of the secondary limits' pacing, in the
// default reading (GitHubSecondary: a label write on an issue is no
// content) and the strict one (GitHubSecondaryLabelsAsContent: every write
// is): content units, then points.
func TestGitHubSecondaryCosts(t *testing.T) {
	t.Parallel()
	const api = "https://api.github.com"
	for _, c := range []struct {
		method, url     string
		mutations       int // WithLabelMutations, 0 for none
		content, strict int
		points          int
	}{
		{"POST", api + "/repos/o/r/issues/7/labels", 0, 0, 1, 5},
		{"PUT", api + "/repos/o/r/issues/7/labels", 0, 0, 1, 5},
		{"DELETE", api + "/repos/o/r/issues/7/labels/agent-smith:pending", 0, 0, 1, 5},
		{"DELETE", "https://ghe.example/api/v3/repos/o/r/issues/7/labels/a/b", 0, 0, 1, 5},
		{"POST", api + "/repos/o/r/issues/7/comments", 0, 1, 1, 5},
		{"POST", api + "/repos/o/r/issues/7/reactions", 0, 1, 1, 5},
		{"POST", api + "/repos/o/r/labels", 0, 1, 1, 5},
		{"PATCH", api + "/repos/o/r/issues/7", 0, 1, 1, 5},
		{"GET", api + "/repos/o/r/issues/7/labels", 0, 0, 0, 0},
		{"POST", api + "/app/installations/1/access_tokens", 0, 0, 0, 0},
		{"POST", api + "/graphql", 2, 0, 2, 3},
		{"POST", api + "/graphql", 1, 0, 1, 3},
		{"POST", api + "/graphql", 0, 1, 1, 3},
	} {
		req := httptest.NewRequest(c.method, c.url, nil)
		if c.mutations > 0 {
			req = req.WithContext(WithLabelMutations(req.Context(), c.mutations))
		}
		cost := func(s []Secondary, name string) int {
			for _, l := range s {
				if l.Name == name {
					return l.Cost(req)
				}
			}
			t.Fatalf("no %q limit", name)
			return 0
		}
		got := []int{cost(GitHubSecondary, "content"), cost(GitHubSecondaryLabelsAsContent, "content"),
			cost(GitHubSecondary, "points"), cost(GitHubSecondaryLabelsAsContent, "points")}
		if want := []int{c.content, c.strict, c.points, c.points}; !slices.Equal(got, want) {
			t.Errorf("%s %s (%d mutations): content, strict content, points, strict points = %v, want %v",
				c.method, c.url, c.mutations, got, want)
		}
	}
}
