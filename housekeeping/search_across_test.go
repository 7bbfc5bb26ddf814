package housekeeping

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/azuredevops"
	"github.com/agentsmithd/agentsmithd/platforms/gitlab"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// Projects of one GitLab top-level group, or of one Azure DevOps
// organisation, on one token are listed with one cross-project call per
// state (GitLab's group issues, subgroups included; Azure DevOps'
// organisation-level WIQL), whatever their number; orphans in every one of
// them are found, each read afresh through its own project's tracker.
func TestSlowCycleListsAcrossProjectsOnce(t *testing.T) {
	for _, c := range []struct {
		platform      string
		repos         []string
		cross, single string
		tracker       func(base, repo, name string) (platforms.Tracker, error)
	}{
		{gitlab.Platform, []string{"acme/a", "acme/b", "acme/platform/c", "acme/platform/deep/d"},
			"GET /gitlab/api/v4/groups/{id}/issues", "GET /gitlab/api/v4/projects/{id}/issues",
			func(base, repo, name string) (platforms.Tracker, error) {
				return gitlab.New(gitlab.Options{BaseURL: base + "/gitlab/", Repo: repo, Project: name, Token: "t", Writer: "test"})
			}},
		{azuredevops.Platform, []string{"acmeorg/a", "acmeorg/b", "acmeorg/Team C", "acmeorg/d"},
			"POST /ado/{org}/_apis/wit/wiql", "POST /ado/{org}/{project}/_apis/wit/wiql",
			func(base, repo, name string) (platforms.Tracker, error) {
				return azuredevops.New(azuredevops.Options{BaseURL: base + "/ado/", Repo: repo, Project: name, Token: "t", Writer: "test"})
			}},
	} {
		t.Run(c.platform, func(t *testing.T) {
			rdb := redistest.Start(t).Client(t)
			s := trackersim.New(trackersim.Options{})
			t.Cleanup(s.Close)
			s.NumberWorkItemsPerOrganisation("acmeorg") // as Azure DevOps numbers
			srv := httptest.NewServer(s.Handler())
			t.Cleanup(srv.Close)
			projects := lifecycle.Projects{}
			for i, repo := range c.repos {
				s.CreateRepo(repo)
				name := fmt.Sprintf("p%d", i)
				tr, err := c.tracker(srv.URL, repo, name)
				if err != nil {
					t.Fatal(err)
				}
				projects[name] = &lifecycle.Project{Name: name, Platform: c.platform, Tracker: tr, TriggerLabel: "agent-smith",
					Pipeline: lifecycle.Pipeline{Command: []string{"true"}, MaxAttempts: 3}}
			}
			labels := lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}
			claims := claim.NewService(rdb, queue.New(rdb, keys.Queue()), projects,
				claim.Config{Instance: "test", Labels: labels, Logger: zaptest.NewLogger(t)})
			stale := NewStaleJobDetector(rdb, claims, StaleJobDetectorConfig{Logger: zaptest.NewLogger(t)})
			orphans := map[string]int{}
			for _, repo := range c.repos {
				orphans[repo] = s.CreateIssue(repo, "orphan", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
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
			if n := after.Calls[c.cross] - before.Calls[c.cross]; n != 1 {
				t.Errorf("%d cross-project listings, want 1 for the four projects", n)
			}
			if n := after.Calls[c.single] - before.Calls[c.single]; n != 0 {
				t.Errorf("%d project listings, want 0", n)
			}
		})
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
	got, err := lifecycle.ListOpen(t.Context(), ps, lifecycletest.Label(lifecycle.InProgress))
	if err != nil || len(got) != 2 || lists != 2 {
		t.Errorf("ListOpen: %d projects listed, %d project lists, err %v: want both listed one by one", len(got), lists, err)
	}
}
