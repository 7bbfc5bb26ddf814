package housekeeping

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
)

// ghLabelWrite is the sim's name of GitHub's add-labels call, the first
// write of a relabel.
const ghLabelWrite = "POST /repos/{owner}/{repo}/issues/{number}/labels"

// movingClock is a clock a test moves.
type movingClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *movingClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *movingClock) Add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

// The TriggerSweeper does not repeat a label write the tracker refused for
// good every cycle: four sweeps a minute apart write once, and the sweeps
// report no error; a label edit has it tried at the next sweep.
func TestTriggerSweeperBacksOffATicketRefusedForGood(t *testing.T) {
	w := lifecycletest.New(t, 3)
	ctx := t.Context()
	clock := &movingClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	claims := lifecycle.NewClaimService(w.RDB, w.Queue, w.Projects, lifecycle.ClaimConfig{Instance: "test", Labels: w.Labels,
		Clock: clock.Now, Logger: zaptest.NewLogger(t)})
	sweeper := NewTriggerSweeper(claims, TriggerSweeperConfig{Logger: zaptest.NewLogger(t)})
	const n = 1
	w.Sim.CreateRepo(lifecycletest.Repo)
	w.Sim.RefuseLabelWrites(lifecycletest.Repo, n, true)
	if got := w.Sim.CreateIssue(lifecycletest.Repo, "refused", "", "agent-smith"); got != n {
		t.Fatalf("issue %d, want %d", got, n)
	}
	for range 4 {
		if err := sweeper.Sweep(ctx); err != nil {
			t.Errorf("sweep: %v (a refusal for good is an outcome, not an error)", err)
		}
		clock.Add(time.Minute)
	}
	if got := w.Sim.Stats().Calls[ghLabelWrite]; got != 1 {
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
	if got := w.Sim.Stats().Calls[ghLabelWrite]; got != 2 {
		t.Errorf("%d label writes after the ticket changed, want 2", got)
	}
}
