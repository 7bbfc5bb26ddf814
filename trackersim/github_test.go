package trackersim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v60/github"
)

// start runs a Sim behind a real HTTP server and returns a go-github client
// pointed at its GitHub dialect.
func start(t *testing.T, opts Options) (*Sim, *github.Client, *httptest.Server) {
	t.Helper()
	s := New(opts)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { srv.Close(); s.Close() })
	return s, newClient(t, srv), srv
}

func newClient(t *testing.T, srv *httptest.Server) *github.Client {
	t.Helper()
	c := github.NewClient(srv.Client())
	u, err := url.Parse(srv.URL + "/github/")
	if err != nil {
		t.Fatal(err)
	}
	c.BaseURL = u
	return c
}

func statusOf(err error) int {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}

func TestGetIssueAndETag(t *testing.T) {
	t.Parallel()
	s, c, _ := start(t, Options{})
	ctx := context.Background()
	n := s.CreateIssue("demo/app", "Fix it", "body text", "agent-smith", "bug")

	is, resp, err := c.Issues.Get(ctx, "demo", "app", n)
	if err != nil {
		t.Fatal(err)
	}
	if is.GetNumber() != n || is.GetTitle() != "Fix it" || is.GetBody() != "body text" || is.GetState() != "open" {
		t.Fatalf("issue = %+v", is)
	}
	var names []string
	for _, l := range is.Labels {
		names = append(names, l.GetName())
		if l.GetID() == 0 || l.GetColor() == "" {
			t.Errorf("label %q lacks id or color", l.GetName())
		}
	}
	if !slices.Equal(names, []string{"agent-smith", "bug"}) {
		t.Fatalf("labels = %v", names)
	}
	if is.GetUser().GetLogin() != "human" || is.GetCreatedAt().IsZero() || is.GetHTMLURL() == "" || is.GetRepositoryURL() == "" {
		t.Fatalf("missing fields: %+v", is)
	}
	// Go's transport asks for gzip: the answer is compressed and its ETag
	// weak; the same representation uncompressed carries the strong tag.
	etag := resp.Header.Get("ETag")
	if !strings.HasPrefix(etag, `W/"`) {
		t.Fatalf("ETag %q of a gzip response is not weak", etag)
	}
	if got, _ := s.Issue("demo/app", n); "W/"+got.ETag != etag {
		t.Fatalf("Go API ETag %q, HTTP ETag %q: want the same tag weakened", got.ETag, etag)
	}
	req, _ := c.NewRequest("GET", "repos/demo/app/issues/"+strconv.Itoa(n), nil)
	req.Header.Set("Accept-Encoding", "identity")
	if resp, err := c.Do(ctx, req, nil); err != nil || resp.Header.Get("ETag") != strings.TrimPrefix(etag, "W/") ||
		resp.Header.Get("Content-Encoding") != "" {
		t.Fatalf("uncompressed GET: ETag %q encoding %q err %v, want the strong %s", resp.Header.Get("ETag"),
			resp.Header.Get("Content-Encoding"), err, strings.TrimPrefix(etag, "W/"))
	}
	for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Used",
		"X-RateLimit-Reset", "X-RateLimit-Resource", "X-GitHub-Request-Id"} {
		if resp.Header.Get(h) == "" {
			t.Errorf("header %s missing", h)
		}
	}
	if resp.Rate.Limit != 5000 || resp.Rate.Remaining != 4999 {
		t.Errorf("rate = %+v", resp.Rate)
	}

	// Every change gives a new ETag, including a return to an earlier label set.
	seen := map[string]bool{etag: true}
	for _, change := range []func() error{
		func() error { return s.AddLabels("demo/app", n, "x") },
		func() error { return s.RemoveLabel("demo/app", n, "x") },
		func() error { return s.AddComment("demo/app", n, "hi") },
		func() error { return s.SetOpen("demo/app", n, false) },
	} {
		if err := change(); err != nil {
			t.Fatal(err)
		}
		got, _ := s.Issue("demo/app", n)
		if seen[got.ETag] {
			t.Fatalf("ETag %q reused after a change", got.ETag)
		}
		seen[got.ETag] = true
	}
	if s.Stats().Calls["GET /repos/{owner}/{repo}/issues/{number}"] != 2 {
		t.Errorf("calls = %v", s.Stats().Calls)
	}
}

func TestNotFoundAndBadJSON(t *testing.T) {
	t.Parallel()
	s, c, srv := start(t, Options{})
	ctx := context.Background()
	s.CreateIssue("demo/app", "one", "")
	if _, _, err := c.Issues.Get(ctx, "demo", "nope", 1); statusOf(err) != 404 {
		t.Errorf("unknown repo: %v", err)
	}
	if _, _, err := c.Issues.Get(ctx, "demo", "app", 9); statusOf(err) != 404 {
		t.Errorf("unknown issue: %v", err)
	}
	if _, _, err := c.Issues.Create(ctx, "demo", "nope", &github.IssueRequest{Title: github.String("x")}); statusOf(err) != 404 {
		t.Errorf("create in unknown repo: %v", err)
	}
	req, _ := http.NewRequest("PATCH", srv.URL+"/github/repos/demo/app/issues/1", strings.NewReader("{not json"))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("bad JSON: status %d", resp.StatusCode)
	}
	if _, _, err := c.Issues.Edit(ctx, "demo", "app", 1, &github.IssueRequest{State: github.String("weird")}); statusOf(err) != 422 {
		t.Errorf("bad state: %v", err)
	}
}

// TestIfMatchModes pins each If-Match mode on the issue PATCH and the label
// endpoints, for weak and strong, current and stale validators. Only the
// default, IfMatchRejectWeak, is GitHub's observed behaviour.
func TestIfMatchModes(t *testing.T) {
	t.Parallel()
	const (
		ok       = http.StatusOK
		bad      = http.StatusBadRequest
		stale412 = http.StatusPreconditionFailed
	)
	type want struct {
		code    int
		written bool
	}
	cases := []struct {
		mode                                     IfMatchMode
		weakCur, weakStale, strongCur, strongOld want
	}{
		{IfMatchRejectWeak, want{bad, false}, want{bad, false}, want{ok, true}, want{stale412, true}},
		{IfMatchIgnore, want{ok, true}, want{ok, true}, want{ok, true}, want{ok, true}},
		{IfMatch412Apply, want{ok, true}, want{stale412, true}, want{ok, true}, want{stale412, true}},
	}
	for _, tc := range cases {
		t.Run(string(tc.mode), func(t *testing.T) {
			opts := Options{GitHubIfMatch: tc.mode}
			if tc.mode == IfMatchRejectWeak {
				opts.GitHubIfMatch = "" // the default
			}
			s, c, _ := start(t, opts)
			ctx := context.Background()
			n := s.CreateIssue("demo/app", "claim me", "", "agent-smith", "keep")
			path := "repos/demo/app/issues/" + strconv.Itoa(n)
			write := func(kind, etag, label string) int {
				t.Helper()
				var req *http.Request
				var err error
				switch kind {
				case "patch":
					labels := append(slices.Clone(issueLabels(t, s, n)), label)
					req, err = c.NewRequest("PATCH", path, &github.IssueRequest{Labels: &labels})
				case "add":
					req, err = c.NewRequest("POST", path+"/labels", []string{label})
				}
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("If-Match", etag)
				resp, _ := c.Do(ctx, req, nil)
				if resp == nil {
					t.Fatalf("%s: no response", kind)
				}
				return resp.StatusCode
			}
			for _, kind := range []string{"patch", "add"} {
				for i, step := range []struct {
					name  string
					stale bool
					weak  bool
					want  want
				}{
					{"weak current", false, true, tc.weakCur},
					{"weak stale", true, true, tc.weakStale},
					{"strong current", false, false, tc.strongCur},
					{"strong stale", true, false, tc.strongOld},
				} {
					cur, _ := s.Issue("demo/app", n)
					tag := cur.ETag
					if step.stale {
						if err := s.AddLabels("demo/app", n, kind+"-human-"+strconv.Itoa(i)); err != nil {
							t.Fatal(err)
						}
					}
					if step.weak {
						tag = "W/" + tag
					}
					label := kind + "-" + strconv.Itoa(i)
					code := write(kind, tag, label)
					written := slices.Contains(issueLabels(t, s, n), label)
					if code != step.want.code || written != step.want.written {
						t.Errorf("%s, %s If-Match: status %d written %v, want %d written %v",
							kind, step.name, code, written, step.want.code, step.want.written)
					}
				}
			}
		})
	}
}

func issueLabels(t *testing.T, s *Sim, n int) []string {
	t.Helper()
	is, ok := s.Issue("demo/app", n)
	if !ok {
		t.Fatalf("no issue %d", n)
	}
	return is.Labels
}

func TestIfNoneMatchNotCounted(t *testing.T) {
	t.Parallel()
	s, c, _ := start(t, Options{})
	ctx := context.Background()
	n := s.CreateIssue("demo/app", "poll me", "")
	_, resp, err := c.Issues.Get(ctx, "demo", "app", n)
	if err != nil {
		t.Fatal(err)
	}
	etag, remaining := resp.Header.Get("ETag"), resp.Rate.Remaining

	req, _ := c.NewRequest("GET", "repos/demo/app/issues/"+strconv.Itoa(n), nil)
	req.Header.Set("If-None-Match", etag)
	resp, err = c.Do(ctx, req, nil)
	if resp == nil || resp.StatusCode != http.StatusNotModified {
		t.Fatalf("If-None-Match: resp %v err %v", resp, err)
	}
	if resp.Rate.Remaining != remaining {
		t.Fatalf("304 counted: remaining %d, before %d", resp.Rate.Remaining, remaining)
	}
	_, resp, err = c.Issues.Get(ctx, "demo", "app", n)
	if err != nil || resp.Rate.Remaining != remaining-1 {
		t.Fatalf("after 304: remaining %d err %v", resp.Rate.Remaining, err)
	}
	if st := s.Stats(); st.NotModified != 1 {
		t.Fatalf("NotModified = %d", st.NotModified)
	}

	// A change makes the old ETag stale: 200 again.
	if err := s.AddLabels("demo/app", n, "x"); err != nil {
		t.Fatal(err)
	}
	req, _ = c.NewRequest("GET", "repos/demo/app/issues/"+strconv.Itoa(n), nil)
	req.Header.Set("If-None-Match", etag)
	if resp, err = c.Do(ctx, req, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("after change: %v %v", resp, err)
	}
}

func TestListFilterAndPagination(t *testing.T) {
	t.Parallel()
	s, c, _ := start(t, Options{})
	ctx := context.Background()
	const trigger, done = "agent-smith", "agent-smith:done"
	var want []int
	for i := range 7 {
		want = append(want, s.CreateIssue("demo/app", "both "+strconv.Itoa(i), "", trigger, done, "ünïcode"))
	}
	s.CreateIssue("demo/app", "trigger only", "", trigger)
	s.CreateIssue("demo/app", "other", "", "bug")
	closed := s.CreateIssue("demo/app", "closed", "", trigger, done, "ünïcode")
	if err := s.SetOpen("demo/app", closed, false); err != nil {
		t.Fatal(err)
	}
	s.CreateIssue("demo/other", "other repo", "", trigger, done, "ünïcode")

	opts := &github.IssueListByRepoOptions{State: "open", Labels: []string{trigger, done, "ünïcode"},
		Sort: "created", Direction: "asc", ListOptions: github.ListOptions{PerPage: 3}}
	var got []int
	pages := 0
	for {
		is, resp, err := c.Issues.ListByRepo(ctx, "demo", "app", opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if pages == 1 && (resp.LastPage != 3 || resp.NextPage != 2 || resp.FirstPage != 0) {
			t.Fatalf("first page links: next %d last %d first %d (%s)", resp.NextPage, resp.LastPage, resp.FirstPage, resp.Header.Get("Link"))
		}
		if pages == 2 && (resp.PrevPage != 1 || resp.FirstPage != 1) {
			t.Fatalf("second page links: %s", resp.Header.Get("Link"))
		}
		for _, i := range is {
			got = append(got, i.GetNumber())
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if pages != 3 || !slices.Equal(got, want) {
		t.Fatalf("pages %d, got %v, want %v", pages, got, want)
	}

	// state=all includes the closed one; the default is open and newest first.
	all, _, err := c.Issues.ListByRepo(ctx, "demo", "app", &github.IssueListByRepoOptions{State: "all", Labels: []string{done}})
	if err != nil || len(all) != 8 {
		t.Fatalf("state=all: %d %v", len(all), err)
	}
	open, resp, err := c.Issues.ListByRepo(ctx, "demo", "app", nil)
	if err != nil || len(open) != 9 || open[0].GetNumber() != 9 || resp.Header.Get("Link") != "" {
		t.Fatalf("default list: %d first %d link %q err %v", len(open), open[0].GetNumber(), resp.Header.Get("Link"), err)
	}

	// Lists carry an ETag and honour If-None-Match.
	req, _ := c.NewRequest("GET", "repos/demo/app/issues", nil)
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	if resp, _ = c.Do(ctx, req, nil); resp.StatusCode != http.StatusNotModified {
		t.Fatalf("list If-None-Match: %d", resp.StatusCode)
	}
}

func TestCommentsAndLabels(t *testing.T) {
	t.Parallel()
	s, c, _ := start(t, Options{PerPage: 2})
	ctx := context.Background()
	n := s.CreateIssue("demo/app", "talk", "", "agent-smith")
	before, _ := s.Issue("demo/app", n)
	for i := range 3 {
		cm, resp, err := c.Issues.CreateComment(ctx, "demo", "app", n, &github.IssueComment{Body: github.String("msg " + strconv.Itoa(i))})
		if err != nil || resp.StatusCode != http.StatusCreated || cm.GetBody() != "msg "+strconv.Itoa(i) || cm.GetUser().GetLogin() != botLogin {
			t.Fatalf("create comment: %v %v %+v", resp, err, cm)
		}
	}
	var bodies []string
	opts := &github.IssueListCommentsOptions{}
	for {
		cs, resp, err := c.Issues.ListComments(ctx, "demo", "app", n, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, cm := range cs {
			bodies = append(bodies, cm.GetBody())
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if !slices.Equal(bodies, []string{"msg 0", "msg 1", "msg 2"}) {
		t.Fatalf("comments = %v", bodies)
	}
	after, _ := s.Issue("demo/app", n)
	if after.ETag == before.ETag || len(after.Comments) != 3 || after.Comments[0].Author != botLogin {
		t.Fatalf("issue after comments: %+v", after)
	}
	if is, _, _ := c.Issues.Get(ctx, "demo", "app", n); is.GetComments() != 3 {
		t.Fatalf("comments count = %d", is.GetComments())
	}

	// Labels: add, remove with escaped names, replace, and 404 for an absent label.
	weird := []string{"agent-smith:done", "día ü/x", "100%"}
	ls, _, err := c.Issues.AddLabelsToIssue(ctx, "demo", "app", n, weird)
	if err != nil || len(ls) != 4 {
		t.Fatalf("add labels: %v %v", ls, err)
	}
	for _, name := range weird {
		if _, err := c.Issues.RemoveLabelForIssue(ctx, "demo", "app", n, url.PathEscape(name)); err != nil {
			t.Fatalf("remove %q: %v", name, err)
		}
	}
	if got, _ := s.Issue("demo/app", n); !slices.Equal(got.Labels, []string{"agent-smith"}) {
		t.Fatalf("labels after removes = %v", got.Labels)
	}
	if _, err := c.Issues.RemoveLabelForIssue(ctx, "demo", "app", n, "absent"); statusOf(err) != 404 {
		t.Fatalf("remove absent label: %v", err)
	}
	if _, _, err := c.Issues.ReplaceLabelsForIssue(ctx, "demo", "app", n, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Issue("demo/app", n); !slices.Equal(got.Labels, []string{"a", "b"}) {
		t.Fatalf("labels after replace = %v", got.Labels)
	}
	if _, err := c.Issues.RemoveLabelsForIssue(ctx, "demo", "app", n); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Issue("demo/app", n); len(got.Labels) != 0 {
		t.Fatalf("labels after remove all = %v", got.Labels)
	}
	created, resp, err := c.Issues.Create(ctx, "demo", "app", &github.IssueRequest{Title: github.String("via API"), Labels: &[]string{"x"}})
	if err != nil || resp.StatusCode != 201 || created.GetNumber() != 2 || created.GetUser().GetLogin() != botLogin {
		t.Fatalf("create: %v %+v", err, created)
	}
	if _, _, err := c.Issues.Create(ctx, "demo", "app", &github.IssueRequest{}); statusOf(err) != 422 {
		t.Fatalf("create without title: %v", err)
	}
}

func TestAuthAndFaults(t *testing.T) {
	t.Parallel()
	s, c, srv := start(t, Options{Tokens: []string{"s3cret"}})
	ctx := context.Background()
	n := s.CreateIssue("demo/app", "x", "")
	if _, _, err := c.Issues.Get(ctx, "demo", "app", n); statusOf(err) != http.StatusUnauthorized {
		t.Fatalf("no token: %v", err)
	}
	if _, _, err := c.WithAuthToken("wrong").Issues.Get(ctx, "demo", "app", n); statusOf(err) != http.StatusUnauthorized {
		t.Fatalf("wrong token: %v", err)
	}
	authed := c.WithAuthToken("s3cret")
	if _, _, err := authed.Issues.Get(ctx, "demo", "app", n); err != nil {
		t.Fatalf("good token: %v", err)
	}

	s.SetFaults(Faults{RateLimitNext: 1, RetryAfter: 7})
	_, resp, err := authed.Issues.Get(ctx, "demo", "app", n)
	if statusOf(err) != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "7" ||
		resp.Header.Get("X-RateLimit-Remaining") != "0" || resp.Header.Get("X-RateLimit-Reset") == "" {
		t.Fatalf("429 fault: %v %v", resp, err)
	}
	// From here go-github refuses locally until the advertised reset; a fresh
	// client (as after a wait) gets through because the fault was used up.
	fresh := newClient(t, srv).WithAuthToken("s3cret")
	if _, _, err := fresh.Issues.Get(ctx, "demo", "app", n); err != nil {
		t.Fatalf("after 429: %v", err)
	}

	s.SetFaults(Faults{ErrorRate: 1})
	if _, _, err := fresh.Issues.Get(ctx, "demo", "app", n); statusOf(err) != http.StatusBadGateway {
		t.Fatalf("502 fault: %v", err)
	}
	// ErrorRate is deterministic for a seed.
	pattern := func() []bool {
		s.SetFaults(Faults{ErrorRate: 0.5, Seed: 42})
		var out []bool
		for range 12 {
			_, _, err := fresh.Issues.Get(ctx, "demo", "app", n)
			out = append(out, err != nil)
		}
		return out
	}
	if a, b := pattern(), pattern(); !slices.Equal(a, b) || !slices.Contains(a, true) || !slices.Contains(a, false) {
		t.Fatalf("error pattern not reproducible or degenerate: %v %v", a, b)
	}
	s.SetFaults(Faults{})
}

func TestPrimaryRateLimit(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	s, c, _ := start(t, Options{RateLimit: 2, Clock: clock})
	n := s.CreateIssue("demo/app", "x", "")
	ctx := context.Background()
	for range 2 {
		if _, _, err := c.Issues.Get(ctx, "demo", "app", n); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := c.Issues.Get(ctx, "demo", "app", n)
	var rle *github.RateLimitError
	if !errors.As(err, &rle) {
		t.Fatalf("third call: %v", err)
	}
}

// TestETagsAreTokenSpecific pins that an ETag belongs to the token that read
// it (eclipse-csi/otterdog#201): another token's If-None-Match, on an issue
// or a listing, is a full 200 charged to the rate limit, the token's own is
// a free 304, and a strong If-Match read by another token is stale. With
// GitHubSharedETags one tag serves every token.
func TestETagsAreTokenSpecific(t *testing.T) {
	t.Parallel()
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			s, _, srv := start(t, Options{Tokens: []string{"tok-a", "tok-b"}, GitHubSharedETags: shared,
				GitHubIfMatch: IfMatch412Apply})
			n := s.CreateIssue("demo/app", "cache me", "", "agent-smith")
			do := func(method, path, token, header, tag string) *http.Response {
				t.Helper()
				var body io.Reader
				if method == "PATCH" {
					body = strings.NewReader(`{"title":"cache me again"}`)
				}
				req, err := http.NewRequest(method, srv.URL+"/github/"+path, body)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Accept-Encoding", "identity")
				if header != "" {
					req.Header.Set(header, tag)
				}
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp
			}
			for _, path := range []string{"repos/demo/app/issues/" + strconv.Itoa(n), "repos/demo/app/issues?state=all"} {
				tagA := do("GET", path, "tok-a", "", "").Header.Get("ETag")
				before := do("GET", path, "tok-b", "", "")
				tagB := before.Header.Get("ETag")
				if (tagA == tagB) != shared {
					t.Fatalf("%s: tok-a tag %s, tok-b tag %s, want equal only when shared", path, tagA, tagB)
				}
				if is, _ := s.Issue("demo/app", n); strings.HasPrefix(path, "repos/demo/app/issues/") && s.GitHubETag(is, "tok-b") != tagB {
					t.Errorf("GitHubETag(tok-b) = %s, HTTP tag %s", s.GitHubETag(is, "tok-b"), tagB)
				}
				cross := do("GET", path, "tok-b", "If-None-Match", tagA)
				wantCode, wantUsed := http.StatusNotModified, before.Header.Get("X-RateLimit-Used")
				if !shared {
					used, _ := strconv.Atoi(wantUsed)
					wantCode, wantUsed = http.StatusOK, strconv.Itoa(used+1)
				}
				if cross.StatusCode != wantCode || cross.Header.Get("X-RateLimit-Used") != wantUsed {
					t.Errorf("%s: tok-b with tok-a's tag: %d, used %s; want %d, used %s", path,
						cross.StatusCode, cross.Header.Get("X-RateLimit-Used"), wantCode, wantUsed)
				}
				if own := do("GET", path, "tok-b", "If-None-Match", tagB); own.StatusCode != http.StatusNotModified {
					t.Errorf("%s: tok-b with its own tag: %d, want 304", path, own.StatusCode)
				}
			}
			// If-Match: tok-b's write with tok-a's current strong tag.
			path := "repos/demo/app/issues/" + strconv.Itoa(n)
			tagA := do("GET", path, "tok-a", "", "").Header.Get("ETag")
			want := http.StatusPreconditionFailed
			if shared {
				want = http.StatusOK
			}
			if got := do("PATCH", path, "tok-b", "If-Match", tagA); got.StatusCode != want {
				t.Errorf("PATCH by tok-b with tok-a's tag: %d, want %d", got.StatusCode, want)
			}
			tagA = do("GET", path, "tok-a", "", "").Header.Get("ETag")
			if got := do("PATCH", path, "tok-a", "If-Match", tagA); got.StatusCode != http.StatusOK {
				t.Errorf("PATCH by tok-a with its own tag: %d, want 200", got.StatusCode)
			}
		})
	}
}
