package housekeeping

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp/trackerhttptest"
)

// The TriggerSweeper does not repeat a label write the tracker refused for
// good every cycle: four sweeps a minute apart write once, and the sweeps
// report no error; a label edit has it tried at the next sweep.
func TestTriggerSweeperBacksOffATicketRefusedForGood(t *testing.T) {
	w := lifecycletest.New(t, 3)
	ctx := t.Context()
	clock := trackerhttptest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	claims := claim.NewService(w.RDB, w.Queue, w.Projects, claim.Config{Instance: "test", Labels: w.Labels,
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

// writeCalls counts the sim's write requests other than comments: the label
// writes a refused ticket must not get again.
func writeCalls(calls map[string]int) (writes, comments int) {
	for call, n := range calls {
		switch {
		case strings.HasPrefix(call, "GET "):
		case strings.HasSuffix(call, "/comments"):
			comments += n
		default:
			writes += n
		}
	}
	return writes, comments
}

// The LabelRepairer does not repeat a repair the tracker refused for good
// every cycle: four cycles a minute apart write once and comment once, and
// report no error; a label edit has it tried at the next cycle.
func TestLabelRepairerBacksOffATicketRefusedForGood(t *testing.T) {
	w := lifecycletest.New(t, 3)
	ctx := t.Context()
	clock := trackerhttptest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	claims := claim.NewService(w.RDB, w.Queue, w.Projects, claim.Config{Instance: "test", Labels: w.Labels,
		Clock: clock.Now, Logger: zaptest.NewLogger(t)})
	repairer := NewLabelRepairer(w.RDB, claims, LabelRepairerConfig{Logger: zaptest.NewLogger(t)})
	w.Sim.CreateRepo(lifecycletest.Repo)
	w.Sim.RefuseLabelWrites(lifecycletest.Repo, 1, true)
	n := w.Sim.CreateIssue(lifecycletest.Repo, "cut off", "", "agent-smith", lifecycletest.Label(lifecycle.Enqueued), lifecycletest.Label(lifecycle.InProgress))
	for range 4 {
		if err := repairer.Cycle(ctx); err != nil {
			t.Errorf("cycle: %v (a refusal for good is an outcome, not an error)", err)
		}
		clock.Advance(time.Minute)
	}
	writes, comments := writeCalls(w.Sim.Stats().Calls)
	if writes != 1 || comments != 1 {
		t.Errorf("%d label writes and %d comments over 4 cycles, want 1 and 1", writes, comments)
	}
	if is, _ := w.Sim.Issue(lifecycletest.Repo, n); len(is.Comments) != 1 {
		t.Errorf("%d comments on the ticket, want 1", len(is.Comments))
	}
	if raw, err := w.RDB.Get(ctx, keys.TrackerRefusal(lifecycletest.Ref(n).Key())).Result(); err != nil || !strings.Contains(raw, `"op":"repair"`) {
		t.Errorf("refusal record %s (%v), want op %q", raw, err, lifecycle.RefusalOpRepair)
	}
	if err := w.Sim.AddLabels(lifecycletest.Repo, n, "needs-review"); err != nil {
		t.Fatal(err)
	}
	if err := repairer.Cycle(ctx); err != nil {
		t.Error(err)
	}
	if writes, _ := writeCalls(w.Sim.Stats().Calls); writes != 2 {
		t.Errorf("%d label writes after the ticket changed, want 2", writes)
	}
}

// A Pending ticket whose attempts are used up and whose Pending → Failed
// write the tracker refuses for good is given up on once: over four sweeps
// a minute apart, one label write and two comments (the give-up and the
// refusal's), no error, not one comment a sweep.
func TestGiveUpRefusedForGoodIsNotRepeatedEverySweep(t *testing.T) {
	w := lifecycletest.New(t, 1)
	ctx := t.Context()
	clock := trackerhttptest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	claims := claim.NewService(w.RDB, w.Queue, w.Projects, claim.Config{Instance: "test", Labels: w.Labels,
		Clock: clock.Now, Logger: zaptest.NewLogger(t)})
	sweeper := NewTriggerSweeper(claims, TriggerSweeperConfig{Logger: zaptest.NewLogger(t)})
	n := w.RefusedIssue(t)
	if err := w.RDB.HSet(ctx, keys.Attempts(), lifecycletest.Ref(n).Key(), 1).Err(); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if err := sweeper.Sweep(ctx); err != nil {
			t.Errorf("sweep: %v (a refusal for good is an outcome, not an error)", err)
		}
		clock.Advance(time.Minute)
	}
	writes, comments := writeCalls(w.Sim.Stats().Calls)
	if writes != 1 || comments != 2 {
		t.Errorf("%d label writes and %d comments over 4 sweeps, want 1 and 2", writes, comments)
	}
	if raw, err := w.RDB.Get(ctx, keys.TrackerRefusal(lifecycletest.Ref(n).Key())).Result(); err != nil || !strings.Contains(raw, `"op":"give-up"`) {
		t.Errorf("refusal record %s (%v), want op %q", raw, err, lifecycle.RefusalOpGiveUp)
	}
}
