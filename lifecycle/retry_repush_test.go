package lifecycle_test

import (
	"slices"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// Attempt 1 of 2 fails and its retry waits in the delayed set, which then
// loses it. The EnqueuedReconciler's re-push runs attempt 2, the next: the
// ticket runs max_attempts times in all, not once more.
func TestLostRetryIsRepushedAsTheNextAttempt(t *testing.T) {
	w := lifecycletest.New(t, 2)
	dir := t.TempDir()
	p := w.Projects[lifecycletest.Project]
	lifecycletest.RetryOn(p, 75)
	p.Pipeline.Retry.Backoff = lifecycle.Backoff{Initial: time.Hour, Max: 2 * time.Hour, Multiplier: 2, Jitter: 0.5}
	p.Pipeline.Command = lifecycletest.CountingPipeline("75 75 75")
	rec := consumertest.RunWorld(t, w, dir, 1)
	n := w.ClaimIssue(t, "flaky, retry lost")
	w.WaitOutcome(t, rec, n, lifecycle.Enqueued, "retrying")
	eventually.Wait(t, 5*time.Second, "the retry in the delayed set", func() bool { return len(w.Delayed(t)) == 1 })
	if err := w.RDB.Del(t.Context(), keys.Delayed()).Err(); err != nil {
		t.Fatal(err)
	}

	now := time.Now()
	r := housekeeping.NewEnqueuedReconciler(w.RDB, w.Queue, w.Claims, housekeeping.EnqueuedReconcilerConfig{
		Grace: time.Minute, Clock: func() time.Time { return now }})
	if err := r.SlowCycle(t.Context()); err != nil { // sees the orphan
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	if err := r.SlowCycle(t.Context()); err != nil { // re-pushes it
		t.Fatal(err)
	}
	// The re-pushed run ends the ticket (attempt 2 of 2) or, were it
	// attempt 1 again, schedules one more retry.
	eventually.Wait(t, 20*time.Second, "the re-pushed run to end", func() bool {
		return slices.Equal(rec.Outcomes(), []string{"retrying", "failed"}) || slices.Equal(rec.Outcomes(), []string{"retrying", "retrying"})
	})
	if s := w.State(t, n); s != lifecycle.Failed {
		t.Errorf("state %s after the re-pushed run, want failed (attempts used up)", s)
	}
	if got := lifecycletest.Runs(t, dir); !slices.Equal(got, []string{"1", "2"}) {
		t.Errorf("attempts run %q, want 1 and 2 of max 2", got)
	}
}
