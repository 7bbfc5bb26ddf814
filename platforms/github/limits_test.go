package github_test

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// GitHub refuses a comment over its limit with 422; that answer is
// permanent (ErrRejected), so the daemon does not retry it, and the limit
// the tracker reports lets a comment of exactly that size through.
func TestOversizedCommentIsRejectedForGood(t *testing.T) {
	s := trackersim.New(trackersim.Options{})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	tr, err := github.New(github.Options{BaseURL: srv.URL + "/github/", Repo: "acme/app", Project: "app", Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	n := s.CreateIssue("acme/app", "long comment", "")
	ref := platforms.Ref{Platform: github.Platform, Project: "app", ID: github.FormatID("acme/app", n)}
	limit := platforms.CommentLimit(tr)
	if err := tr.Comment(t.Context(), ref, strings.Repeat("é", limit)); err != nil {
		t.Fatalf("comment at the limit: %v", err)
	}
	err = tr.Comment(t.Context(), ref, strings.Repeat("é", limit+1))
	if !errors.Is(err, platforms.ErrRejected) {
		t.Fatalf("comment over the limit: %v, want ErrRejected", err)
	}
}
