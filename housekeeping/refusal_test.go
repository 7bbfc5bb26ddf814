package housekeeping

import (
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp/trackerhttptest"
)

// The TriggerSweeper does not repeat a label write the tracker refused for
// good every cycle: four sweeps a minute apart write once, and the sweeps
// report no error; a label edit has it tried at the next sweep.
func TestTriggerSweeperBacksOffATicketRefusedForGood(t *testing.T) {
	w := lifecycletest.New(t, 3)
	ctx := t.Context()
	clock := trackerhttptest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	claims := lifecycle.NewClaimService(w.RDB, w.Queue, w.Projects, lifecycle.ClaimConfig{Instance: "test", Labels: w.Labels,
		Clock: clock.Now, Logger: zaptest.NewLogger(t)})
	sweeper := NewTriggerSweeper(claims, TriggerSweeperConfig{Logger: zaptest.NewLogger(t)})
	n := w.RefusedIssue(t)
	for range 4 {
		if err := sweeper.Sweep(ctx); err != nil {
			t.Errorf("sweep: %v (a refusal for good is an outcome, not an error)", err)
		}
		clock.Advance(time.Minute)
	}
	if got := w.Sim.Stats().Calls[lifecycletest.GitHubLabelWrite]; got != 1 {
		t.Errorf("%d label writes over 4 sweeps, want 1", got)
	}
	if is, _ := w.Sim.Issue(lifecycletest.Repo, n); len(is.Comments) != 1 {
		t.Errorf("%d comments, want 1", len(is.Comments))
	}
	if err := w.Sim.AddLabels(lifecycletest.Repo, n, "needs-review"); err != nil {
		t.Fatal(err)
	}
	if err := sweeper.Sweep(ctx); err != nil {
		t.Error(err)
	}
	if got := w.Sim.Stats().Calls[lifecycletest.GitHubLabelWrite]; got != 2 {
		t.Errorf("%d label writes after the ticket changed, want 2", got)
	}
}
