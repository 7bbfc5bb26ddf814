package gitlab_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms/gitlab"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// ListAcross lists the labelled open issues of every project of the
// top-level group, subgroups included, following pagination, with
// project-qualified ids that Covers assigns to the right tracker; none of
// another group's or of closed issues.
func TestListAcrossListsTheGroup(t *testing.T) {
	s := trackersim.New(trackersim.Options{Tokens: []string{simToken}})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	newTracker := func(repo string) *gitlab.Tracker {
		s.CreateRepo(repo)
		tr, err := gitlab.New(gitlab.Options{BaseURL: srv.URL + "/gitlab/", Repo: repo, Token: simToken})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	a, b, other := newTracker("acme/a"), newTracker("acme/platform/b"), newTracker("other/c")
	if a.SearchScope() != b.SearchScope() || a.SearchScope() == other.SearchScope() {
		t.Fatalf("scopes a=%v b=%v other=%v: want a and b equal, other apart", a.SearchScope(), b.SearchScope(), other.SearchScope())
	}
	const label = "agent-smith:in-progress"
	want := map[string]bool{}
	for i := range 150 { // two pages of 100
		repo := []string{"acme/a", "acme/platform/b"}[i%2]
		want[gitlab.FormatID(repo, s.CreateIssue(repo, "hit", "", label))] = true
	}
	s.CreateIssue("other/c", "other group", "", label)
	s.CreateIssue("acme/a", "unlabelled", "")
	closed := s.CreateIssue("acme/platform/b", "closed", "", label)
	if err := s.SetOpen("acme/platform/b", closed, false); err != nil {
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
		if !tk.HasLabel(label) {
			t.Errorf("%s: labels %q lack %q", tk.Ref.ID, tk.Labels, label)
		}
	}
	if n := s.Stats().Calls["GET /gitlab/api/v4/groups/{id}/issues"]; n != 2 {
		t.Errorf("%d group issue requests, want 2 (150 hits, 100 a page)", n)
	}
}
