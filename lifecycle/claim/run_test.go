package claim_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
)

// The consumer's run helpers, copied from its tests (package consumer):
// the claim's tests of a person's retry and of the trigger gate drive
// tickets through real runs, and a test package cannot import another's
// test files.

func findEvent(r *lifecycletest.Recorder, outcome string) (lifecycle.Event, bool) {
	for _, ev := range r.Events() {
		if ev.Outcome == outcome {
			return ev, true
		}
	}
	return lifecycle.Event{}, false
}

// runWorld runs an executor (concurrency n) and the delayed set's promoter
// on w until the test ends. The pipeline gets D=dir.
func runWorld(t *testing.T, w *lifecycletest.World, dir string, n int) *lifecycletest.Recorder {
	t.Helper()
	rec := &lifecycletest.Recorder{}
	p := w.Projects[lifecycletest.Project]
	p.Pipeline.Env = map[string]string{"D": dir}
	ex := consumer.NewExecutor(w.RDB, w.Queue, w.Projects, consumer.ExecutorConfig{
		Instance: "exec-1", Concurrency: n, HeartbeatTTL: 2 * time.Second, HeartbeatRenew: 100 * time.Millisecond,
		ShutdownGrace: time.Second, KillGrace: 200 * time.Millisecond, WorkDir: filepath.Join(dir, "work"),
		TakeWait: 100 * time.Millisecond, Logger: zaptest.NewLogger(t), Observer: rec, LimitDelay: 100 * time.Millisecond,
		Rand: func() float64 { return 0.5 },
	})
	promoter := housekeeping.NewDelayedPromoter(w.Queue, housekeeping.DelayedPromoterConfig{Interval: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = ex.Run(ctx) })
	wg.Go(func() { _ = promoter.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return rec
}

// countingPipeline counts its runs in $D/runs, records each attempt, and
// exits with the n-th word of codes on its n-th run (0 past the end).
func countingPipeline(codes string) []string {
	return []string{"sh", "-c", `echo "$AGENTSMITH_ATTEMPT" >> "$D/runs"; n=$(wc -l < "$D/runs"); set -- ` + codes + `; shift $((n-1)) 2>/dev/null || exit 0; exit ${1:-0}`}
}

func runs(t *testing.T, dir string) []string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(dir, "runs"))
	return strings.Fields(string(b))
}

// waitOutcome waits for ticket n to reach state with its final event.
func waitOutcome(t *testing.T, w *lifecycletest.World, rec *lifecycletest.Recorder, n int, state lifecycle.State, outcome string) {
	t.Helper()
	eventually.Wait(t, 20*time.Second, "the ticket to reach "+state.String(), func() bool {
		_, ok := findEvent(rec, outcome)
		return ok && w.State(t, n) == state
	})
}

// claimIssue opens a triggered issue titled title and claims it.
func claimIssue(t *testing.T, w *lifecycletest.World, title string, labels ...string) int {
	t.Helper()
	n := w.Sim.CreateIssue(lifecycletest.Repo, title, "", append([]string{"agent-smith"}, labels...)...)
	if res, err := w.Claims.Claim(t.Context(), lifecycletest.Ref(n), lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	return n
}
