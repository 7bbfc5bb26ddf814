package github_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// movesWorld is trackersim with the tracker bound to octo/repo over
// go-github and the tracker's default HTTP client.
func movesWorld(t *testing.T) (*trackersim.Sim, *github.Tracker) {
	t.Helper()
	s := trackersim.New(trackersim.Options{Tokens: []string{simToken}})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	tr, err := github.New(github.Options{BaseURL: srv.URL + "/github/", Repo: "octo/repo", Project: "p", Token: simToken, Writer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return s, tr
}

func refOf(n int) platforms.Ref {
	return platforms.Ref{Platform: github.Platform, Project: "p", ID: github.FormatID("octo/repo", n)}
}

// A transferred issue's old URL redirects to the issue in its new
// repository under another number (GitHub: 301 for GET, 307 for writes).
// The ticket octo/repo#n is gone from the tracker's repository: a read is
// ErrNotFound, not the moved issue under the old id, and no label or
// comment of the daemon lands on the moved issue.
func TestTransferredIssueIsGoneNotFollowed(t *testing.T) {
	s, tr := movesWorld(t)
	ctx := context.Background()
	for range 3 { // octo/other#1..3, so the moved issue gets another number
		s.CreateIssue("octo/other", "theirs", "")
	}
	n := s.CreateIssue("octo/repo", "ours", "", "agent-smith")
	tk, err := tr.Get(ctx, refOf(n))
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.TransferIssue("octo/repo", n, "octo/other")
	if err != nil {
		t.Fatal(err)
	}

	if got, err := tr.Get(ctx, refOf(n)); !errors.Is(err, platforms.ErrNotFound) {
		t.Errorf("Get of the transferred issue = %+v, %v; want ErrNotFound", got, err)
	}
	if _, err := tr.Relabel(ctx, tk, []string{"agent-smith:pending"}, "agent-smith:enqueued"); !errors.Is(err, platforms.ErrNotFound) {
		t.Errorf("Relabel of the transferred issue = %v; want ErrNotFound", err)
	}
	if err := tr.Comment(ctx, refOf(n), "claimed"); !errors.Is(err, platforms.ErrNotFound) {
		t.Errorf("Comment on the transferred issue = %v; want ErrNotFound", err)
	}
	moved, _ := s.Issue("octo/other", m)
	if !slices.Equal(moved.Labels, []string{"agent-smith"}) || len(moved.Comments) != 0 {
		t.Errorf("the moved issue octo/other#%d was written: labels %q, %d comments", m, moved.Labels, len(moved.Comments))
	}
	for _, w := range s.Writes() {
		if w.Writer == "test" {
			t.Errorf("the tracker wrote %+v", w)
		}
	}
}

// A renamed repository's old name redirects to the same resource under the
// repository's id; GitHub asks clients to follow it, and the tracker does,
// for reads and for writes.
func TestRenamedRepositoryIsFollowed(t *testing.T) {
	s, tr := movesWorld(t)
	ctx := context.Background()
	n := s.CreateIssue("octo/repo", "ours", "", "agent-smith")
	if err := s.RenameRepo("octo/repo", "octo/renamed"); err != nil {
		t.Fatal(err)
	}
	tk, err := tr.Get(ctx, refOf(n))
	if err != nil {
		t.Fatalf("Get through the rename: %v", err)
	}
	if tk.Ref != refOf(n) || !tk.HasLabel("agent-smith") {
		t.Errorf("Get = %+v, want %s with its label", tk, refOf(n).ID)
	}
	if _, err := tr.Relabel(ctx, tk, nil, "agent-smith:enqueued"); err != nil {
		t.Fatalf("Relabel through the rename: %v", err)
	}
	if err := tr.Comment(ctx, refOf(n), "claimed"); err != nil {
		t.Fatalf("Comment through the rename: %v", err)
	}
	is, _ := s.Issue("octo/renamed", n)
	if !slices.Equal(is.Labels, []string{"agent-smith", "agent-smith:enqueued"}) || len(is.Comments) != 1 {
		t.Errorf("issue after the writes: labels %q, %d comments", is.Labels, len(is.Comments))
	}
}
