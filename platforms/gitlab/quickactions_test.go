package gitlab_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/gitlab"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// No note the daemon posts or edits runs a quick action, whoever wrote its
// lines: trackersim executes them as GitLab does.
func TestNotesRunNoQuickActions(t *testing.T) {
	const project = "acme/app"
	s := trackersim.New(trackersim.Options{})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	s.CreateRepo("other/project")
	n := s.CreateIssue(project, "Fix it", "", "agent-smith:in-progress")
	tr, err := gitlab.New(gitlab.Options{BaseURL: srv.URL + "/gitlab/api/v4/", Repo: project, Project: "p", Writer: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ref := platforms.Ref{Platform: gitlab.Platform, ID: gitlab.FormatID(project, n)}
	hostile := "summary\n/close\n/title pwned\n  /label ~x\n/move other/project"
	if err := tr.Comment(ctx, ref, hostile); err != nil {
		t.Fatal(err)
	}
	id, err := tr.AddComment(ctx, ref, "progress")
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.EditComment(ctx, ref, id, "/close\n/clone other/project"); err != nil {
		t.Fatal(err)
	}
	is, _ := s.Issue(project, n)
	if !is.Open || is.Title != "Fix it" || !slices.Equal(is.Labels, []string{"agent-smith:in-progress"}) {
		t.Fatalf("the notes acted on the issue: %+v", is)
	}
	if _, ok := s.Issue("other/project", 1); ok {
		t.Fatal("a note moved or cloned the issue")
	}
	if len(is.Comments) != 2 || !strings.Contains(is.Comments[0].Body, "\u200b/close") {
		t.Fatalf("comments: %+v", is.Comments)
	}
}
