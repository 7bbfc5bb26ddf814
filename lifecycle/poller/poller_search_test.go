package poller_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/poller"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// Polled repositories of one owner and token that fall due together (a
// discovered organisation) are listed with one search, not one list call
// each, and every triggered ticket among them is claimed; a project of
// another owner keeps its own list call.
func TestPollerSearchesTheDueRepositoriesOnce(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	s := trackersim.New(trackersim.Options{})
	t.Cleanup(s.Close)
	s.SetGitHubSearchLag(0)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	projects := lifecycle.Projects{}
	repos := []string{"acme/r0", "acme/r1", "acme/r2", "acme/r3", "acme/r4", "other/solo"}
	triggered := map[string]int{}
	for i, repo := range repos {
		name := fmt.Sprintf("p%d", i)
		tr, err := github.New(github.Options{BaseURL: srv.URL + "/github/", Repo: repo, Project: name, Token: "t", Writer: "test"})
		if err != nil {
			t.Fatal(err)
		}
		projects[name] = &lifecycle.Project{Name: name, Platform: github.Platform, Tracker: tr, TriggerLabel: "agent-smith",
			PollInterval: time.Hour, Pipeline: lifecycle.Pipeline{Command: []string{"true"}, MaxAttempts: 3}}
		triggered[repo] = s.CreateIssue(repo, "triggered", "", "agent-smith")
	}
	labels := lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}
	claims := claim.NewService(rdb, queue.New(rdb, keys.Queue()), projects,
		claim.Config{Instance: "test", Labels: labels, Logger: zaptest.NewLogger(t)})
	before := s.Stats()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = poller.NewPoller(claims, zaptest.NewLogger(t)).Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	eventually.Wait(t, 10*time.Second, "every triggered ticket to be claimed", func() bool {
		for repo, n := range triggered {
			if is, _ := s.Issue(repo, n); labels.StateOf(is.Labels) != lifecycle.Enqueued {
				return false
			}
		}
		return true
	})
	after := s.Stats()
	if n := after.Calls["GET /search/issues"] - before.Calls["GET /search/issues"]; n != 1 {
		t.Errorf("%d searches, want 1 for the five acme repositories", n)
	}
	if n := after.Calls["GET /repos/{owner}/{repo}/issues"] - before.Calls["GET /repos/{owner}/{repo}/issues"]; n != 1 {
		t.Errorf("%d repository list calls, want 1 (other/solo)", n)
	}
}
