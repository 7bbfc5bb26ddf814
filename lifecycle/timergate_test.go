package lifecycle_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// A timer gate survives the loss of its stage's request, as a crash
// between the label write that enqueues the gated stage and the request's
// delay leaves the ticket: Enqueued at that stage with no request. The
// EnqueuedReconciler's re-push then waits in the delayed set until the
// start the run recorded, by the injected clock, instead of running the
// stage at once; lost again past that start, it is pushed and the stage
// runs.
func TestTimerGateSurvivesALostRequest(t *testing.T) {
	w := lifecycletest.New(t, 1)
	dir := t.TempDir()
	p := w.Projects[lifecycletest.Project]
	logStage := []string{"sh", "-c", `echo "$AGENTSMITH_STAGE" >> "$D/runs"`}
	p.Stages = []lifecycle.Stage{{Name: "plan", Command: logStage, Timeout: time.Minute, MaxAttempts: 1},
		{Name: "implement", Command: logStage, Timeout: time.Minute, MaxAttempts: 1, Gate: &lifecycle.Gate{After: time.Hour}}}
	var mu sync.Mutex
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	start := now.Add(time.Hour)
	rec := consumertest.RunWorldClock(t, w, dir, 1, clock)
	n := w.ClaimIssue(t, "wait an hour")
	ref := lifecycletest.Ref(n)

	eventually.Wait(t, 20*time.Second, "implement's request in the delayed set", func() bool {
		d := w.Delayed(t)
		return len(d) == 1 && d[0].Stage == "implement" && w.State(t, n) == lifecycle.Enqueued
	})
	if tm, ok, err := runstate.TimerOf(t.Context(), w.RDB, ref); err != nil || !ok || tm.Stage != "implement" || !tm.Due.Equal(start) {
		t.Fatalf("timer recorded %+v %v %v, want implement at %s", tm, ok, err, start)
	}
	lost := func() {
		t.Helper()
		if err := w.RDB.Del(t.Context(), keys.Delayed()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	lost()

	claims := claim.NewService(w.RDB, w.Queue, w.Projects, claim.Config{Instance: "hk", Labels: w.Labels, Clock: clock, Logger: zaptest.NewLogger(t)})
	r := housekeeping.NewEnqueuedReconciler(w.RDB, w.Queue, claims, housekeeping.EnqueuedReconcilerConfig{Grace: time.Minute, Clock: clock})
	repush := func() {
		t.Helper()
		if err := r.SlowCycle(t.Context()); err != nil { // sees the orphan
			t.Fatal(err)
		}
		advance(2 * time.Minute)
		if err := r.SlowCycle(t.Context()); err != nil { // re-pushes it
			t.Fatal(err)
		}
	}
	repush()
	if q := w.Requests(t); len(q) != 0 {
		t.Errorf("re-pushed %+v onto the queue within the timer, want it delayed", q)
	}
	if d := w.Delayed(t); len(d) != 1 || d[0].Stage != "implement" || !d[0].EnqueuedAt.Equal(start) {
		t.Fatalf("delayed set %+v, want implement's request, due at %s", d, start)
	}
	if got := lifecycletest.Runs(t, dir); !slices.Equal(got, []string{"plan"}) {
		t.Fatalf("stages run %q within the timer, want plan alone", got)
	}

	lost()
	advance(time.Hour)
	repush()
	w.WaitOutcome(t, rec, n, lifecycle.Done, "succeeded")
	if got := lifecycletest.Runs(t, dir); !slices.Equal(got, []string{"plan", "implement"}) {
		t.Errorf("stages run %q, want plan then implement", got)
	}
}
