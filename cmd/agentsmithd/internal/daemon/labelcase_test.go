package daemon_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
)

// GitHub label names ignore case and a repository keeps one spelling of
// each: in a repository whose lifecycle labels a person created as
// "Agent-Smith:Enqueued" and so on, each of the daemon's writes attaches
// the repository's spelling. The daemon must read those as its own, or the
// claim succeeds, the executor finds the ticket still pending and drops the
// request, and the sweeper claims it again on every cycle. The trigger
// label is configured as "Agent-Smith" and the ticket carries
// "agent-smith": the same label on GitHub.
func TestGitHubLabelsInTheRepositorysCaseRunToDoneOnce(t *testing.T) {
	e := newEnv(t)
	e.projectExtra = "    trigger_label: Agent-Smith\n"
	catalogue := []string{"agent-smith", "Agent-Smith:Pending", "Agent-Smith:Enqueued", "Agent-Smith:In-Progress", "Agent-Smith:Done", "Agent-Smith:Failed"}
	e.sim.CreateRepo(e.repo)
	for _, l := range catalogue {
		if err := e.sim.CreateLabel(e.repo, l); err != nil {
			t.Fatal(err)
		}
	}
	e.startDaemon(e.config("replica-a", ""))
	n := e.sim.CreateIssue(e.repo, "Fix the login page", "body", "bug")
	if err := e.sim.AddLabels(e.repo, n, "agent-smith"); err != nil {
		t.Fatal(err)
	}
	want := []string{"bug", "agent-smith", "Agent-Smith:Done"}
	eventually.Wait(t, 20*time.Second, fmt.Sprintf("labels %q", want), func() bool {
		is, _ := e.sim.Issue(e.repo, n)
		return slices.Equal(is.Labels, want)
	})
	// The sweeper and the poller list the repository again and again; a
	// ticket they took for pending would be claimed again on each pass.
	const listing = "GET /repos/{owner}/{repo}/issues"
	seen := e.sim.Stats().Calls[listing]
	eventually.Wait(t, 20*time.Second, "three more listings", func() bool { return e.sim.Stats().Calls[listing] >= seen+3 })
	if got := e.starts(n); len(got) != 1 {
		t.Errorf("pipeline started %d times, want 1: %q", len(got), got)
	}
	// Every write the daemon made to the ticket, in the repository's
	// spelling: one claim, one start, one finish, each adding its label
	// and removing the one before.
	var added []string
	for _, w := range e.sim.Writes() {
		if w.Number == n && w.Writer != "human" {
			for _, l := range w.After {
				if !slices.Contains(w.Before, l) {
					added = append(added, l)
				}
			}
		}
	}
	if wantAdded := []string{"Agent-Smith:Enqueued", "Agent-Smith:In-Progress", "Agent-Smith:Done"}; !slices.Equal(added, wantAdded) {
		t.Errorf("the daemon added %q, want %q", added, wantAdded)
	}
}
