package github_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp/trackerhttptest"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// ListAcross finds the labelled open issues of every repository of the
// owner, with repository-qualified ids that Covers assigns to the right
// tracker, and none of another owner's or of closed issues.
func TestListAcrossSearchesTheOwner(t *testing.T) {
	s := trackersim.New(trackersim.Options{Tokens: []string{simToken}})
	t.Cleanup(s.Close)
	s.SetGitHubSearchLag(0)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	newTracker := func(repo string) *github.Tracker {
		tr, err := github.New(github.Options{BaseURL: srv.URL + "/github/", Repo: repo, Token: simToken})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	a, b, other := newTracker("acme/a"), newTracker("acme/b"), newTracker("other/c")
	if a.SearchScope() != b.SearchScope() || a.SearchScope() == other.SearchScope() {
		t.Fatalf("scopes a=%v b=%v other=%v: want a and b equal, other apart", a.SearchScope(), b.SearchScope(), other.SearchScope())
	}
	const label = "agent-smith:in-progress"
	want := map[string]bool{}
	for i := range 150 { // two pages of 100
		repo := []string{"acme/a", "acme/b"}[i%2]
		want[github.FormatID(repo, s.CreateIssue(repo, "hit", "", label))] = true
	}
	s.CreateIssue("other/c", "other owner", "", label)
	s.CreateIssue("acme/a", "unlabelled", "")
	closed := s.CreateIssue("acme/b", "closed", "", label)
	if err := s.SetOpen("acme/b", closed, false); err != nil {
		t.Fatal(err)
	}

	got, err := a.ListAcross(context.Background(), a.SearchScope(), label)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("ListAcross found %d issues, want %d (both pages)", len(got), len(want))
	}
	for _, tk := range got {
		if !want[tk.Ref.ID] {
			t.Errorf("unexpected hit %s", tk.Ref.ID)
		}
		if a.Covers(tk.Ref) == b.Covers(tk.Ref) || other.Covers(tk.Ref) {
			t.Errorf("%s: covered by a=%v b=%v other=%v, want exactly one of a, b", tk.Ref.ID, a.Covers(tk.Ref), b.Covers(tk.Ref), other.Covers(tk.Ref))
		}
	}
	if n := s.Stats().Calls["GET /search/issues"]; n != 2 {
		t.Errorf("%d search requests, want 2 (150 hits, 100 a page)", n)
	}
}

// GitHub's search has its own limit, 30 requests a minute: the 30th answer
// says none remain, so the 31st search is held in the client without a
// request until the minute's reset (GitHub would refuse it 403 with
// X-RateLimit-Resource search and remaining 0), and the core quota's calls
// (a claim's reads and writes) go on meanwhile.
func TestSearchRateLimitIsItsOwnQuota(t *testing.T) {
	clock := trackerhttptest.NewClock(time.Unix(1_700_000_000, 0))
	s := trackersim.New(trackersim.Options{Tokens: []string{simToken}, Clock: clock.Now})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	n := s.CreateIssue("acme/a", "claimable", "", "agent-smith")
	tr, err := github.New(github.Options{BaseURL: srv.URL + "/github/", Repo: "acme/a", Token: simToken,
		HTTPClient: clock.Client(trackerhttp.GitHubRateLimits)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	searches := func() int { return s.Stats().Calls["GET /search/issues"] }
	for i := range trackersim.DefaultGitHubSearchRateLimit {
		if _, err := tr.ListAcross(ctx, tr.SearchScope(), "agent-smith"); err != nil {
			t.Fatalf("search %d of the minute: %v", i+1, err)
		}
	}
	for range 2 {
		if _, err := tr.ListAcross(ctx, tr.SearchScope(), "agent-smith"); !errors.Is(err, trackerhttp.ErrRateLimited) {
			t.Fatalf("search past 30 in the minute: err = %v, want ErrRateLimited", err)
		}
	}
	if n := searches(); n != trackersim.DefaultGitHubSearchRateLimit {
		t.Fatalf("sim saw %d searches, want %d: the ones past the limit held in the client", n, trackersim.DefaultGitHubSearchRateLimit)
	}
	if _, err := tr.Get(ctx, platforms.Ref{Platform: github.Platform, ID: github.FormatID("acme/a", n)}); err != nil {
		t.Fatalf("a core read while the search quota is exhausted: %v", err)
	}

	// The answer itself, as GitHub documents it.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/github/search/issues?q=is:issue+user:acme", nil)
	req.Header.Set("Authorization", "token "+simToken)
	resp, err := searchClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-RateLimit-Resource") != "search" ||
		resp.Header.Get("X-RateLimit-Remaining") != "0" || resp.Header.Get("X-RateLimit-Limit") != "30" {
		t.Errorf("over the search limit: %d, resource %q remaining %q limit %q; want 403, search, 0, 30", resp.StatusCode,
			resp.Header.Get("X-RateLimit-Resource"), resp.Header.Get("X-RateLimit-Remaining"), resp.Header.Get("X-RateLimit-Limit"))
	}

	clock.Advance(61 * time.Second)
	if _, err := tr.ListAcross(ctx, tr.SearchScope(), "agent-smith"); err != nil {
		t.Fatalf("search after the minute's reset: %v", err)
	}
}

// searchClient has a transport of its own: httptest.Server.Close closes
// http.DefaultTransport's idle connections, which breaks a request another
// parallel test is making on it ("CloseIdleConnections called").
var searchClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
