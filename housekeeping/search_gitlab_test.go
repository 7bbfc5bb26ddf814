package housekeeping

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/redistest"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/gitlab"
	"github.com/agentsmithd/agentsmithd/platforms/sim"
)

// GitLab projects of one top-level group on one token are listed with one
// group issues call per state, subgroups included, whatever their number;
// orphans in every one of them are found.
func TestSlowCycleListsAGitLabGroupOnce(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	s := sim.New(sim.Options{})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	projects := lifecycle.Projects{}
	repos := []string{"acme/a", "acme/b", "acme/platform/c", "acme/platform/deep/d"}
	for i, repo := range repos {
		s.CreateRepo(repo)
		name := fmt.Sprintf("p%d", i)
		tr, err := gitlab.New(gitlab.Options{BaseURL: srv.URL + "/gitlab/", Repo: repo, Project: name, Token: "t", Writer: "test"})
		if err != nil {
			t.Fatal(err)
		}
		projects[name] = &lifecycle.Project{Name: name, Platform: gitlab.Platform, Tracker: tr, TriggerLabel: "agent-smith",
			Pipeline: lifecycle.Pipeline{Command: []string{"true"}, MaxAttempts: 3}}
	}
	labels := lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}
	claims := lifecycle.NewClaimService(rdb, queue.New(rdb, keys.Queue()), projects,
		lifecycle.ClaimConfig{Instance: "test", Labels: labels, Logger: zaptest.NewLogger(t)})
	stale := NewStaleJobDetector(rdb, claims, StaleJobDetectorConfig{Logger: zaptest.NewLogger(t)})
	orphans := map[string]int{}
	for _, repo := range repos {
		orphans[repo] = s.CreateIssue(repo, "orphan", "", "agent-smith", "agent-smith:in-progress")
	}
	before := s.Stats()
	if err := stale.SlowCycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	for repo, n := range orphans {
		is, _ := s.Issue(repo, n)
		if st := labels.StateOf(is.Labels); st != lifecycle.Enqueued {
			t.Errorf("%s#%d is %s, want reverted and claimed again (enqueued)", repo, n, st)
		}
	}
	after := s.Stats()
	const group, list = "GET /gitlab/api/v4/groups/{id}/issues", "GET /gitlab/api/v4/projects/{id}/issues"
	if n := after.Calls[group] - before.Calls[group]; n != 1 {
		t.Errorf("%d group issue lists, want 1 for the four projects", n)
	}
	if n := after.Calls[list] - before.Calls[list]; n != 0 {
		t.Errorf("%d project issue lists, want 0", n)
	}
}

// refusedSearcher is a tracker whose cross-project listing is refused
// (a GitLab project access token asking for its group's issues: 404).
type refusedSearcher struct {
	platforms.Tracker
	scope platforms.SearchScope
	lists *int
}

func (r refusedSearcher) SearchScope() platforms.SearchScope { return r.scope }
func (r refusedSearcher) Covers(platforms.Ref) bool          { return true }
func (r refusedSearcher) ListAcross(context.Context, platforms.SearchScope, string) ([]*platforms.Ticket, error) {
	return nil, fmt.Errorf("group issues: %w", platforms.ErrNotFound)
}
func (r refusedSearcher) ListOpen(context.Context, string) ([]*platforms.Ticket, error) {
	*r.lists++
	return []*platforms.Ticket{}, nil
}

// A scope whose cross-project listing is refused for good is listed project
// by project, so housekeeping keeps working for a token that reaches each
// project but not their group.
func TestRefusedSearchFallsBackToProjectLists(t *testing.T) {
	lists := 0
	scope := platforms.SearchScope{Platform: "gitlab", Owner: "acme", Credential: "x"}
	ps := []*lifecycle.Project{
		{Name: "a", Tracker: refusedSearcher{scope: scope, lists: &lists}},
		{Name: "b", Tracker: refusedSearcher{scope: scope, lists: &lists}},
	}
	got, err := lifecycle.ListOpen(t.Context(), ps, "agent-smith:in-progress")
	if err != nil || len(got) != 2 || lists != 2 {
		t.Errorf("ListOpen: %d projects listed, %d project lists, err %v: want both listed one by one", len(got), lists, err)
	}
}
