package github_test

import (
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// Without the issue dependencies API (404), "blocked by" lines of the body
// name the blockers; closed and missing ones do not block.
func TestOpenBlockersFallsBackToBodyLines(t *testing.T) {
	s := trackersim.New(trackersim.Options{NoGitHubIssueDependencies: true})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	tr, err := github.New(github.Options{BaseURL: srv.URL + "/github/", Repo: "acme/app", Project: "app", Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	open := s.CreateIssue("acme/app", "open blocker", "")
	closed := s.CreateIssue("acme/app", "closed blocker", "")
	if err := s.SetOpen("acme/app", closed, false); err != nil {
		t.Fatal(err)
	}
	other := s.CreateIssue("acme/lib", "blocker elsewhere", "")
	body := "Needs the others first.\n\n- Blocked by #1\n* blocked by: #2\nblocked-by acme/lib#1\nBlocked by #99\nnot blocked by #1 (mid-line)\n"
	n := s.CreateIssue("acme/app", "blocked", body)
	got, err := tr.OpenBlockers(t.Context(), platforms.Ref{Platform: github.Platform, Project: "app", ID: github.FormatID("acme/app", n)})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{github.FormatID("acme/app", open), github.FormatID("acme/lib", other)}
	if !slices.Equal(got, want) {
		t.Fatalf("OpenBlockers = %q, want %q", got, want)
	}
}
