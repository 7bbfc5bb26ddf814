package lifecycle_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
)

// The consumer's run helpers, copied from its tests (package consumer):
// lifecycle's own tests (a person's retry, rollback, restart, refusals)
// drive tickets through real runs, and a test package cannot import
// another's test files.

// outcomes lists the outcomes of the transitions out of InProgress.
func outcomes(r *lifecycletest.Recorder) []string {
	var out []string
	for _, ev := range r.Events() {
		if ev.Kind == lifecycle.EventTransition && ev.From == lifecycle.InProgress {
			out = append(out, ev.Outcome)
		}
	}
	return out
}

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

// claimIssue opens a triggered issue titled title and claims it.
func claimIssue(t *testing.T, w *lifecycletest.World, title string, labels ...string) int {
	t.Helper()
	n := w.Sim.CreateIssue(lifecycletest.Repo, title, "", append([]string{"agent-smith"}, labels...)...)
	if res, err := w.Claims.Claim(t.Context(), lifecycletest.Ref(n), lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	return n
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

func retryOn(p *lifecycle.Project, codes ...int) {
	p.Pipeline.Retry = lifecycle.RetryPolicy{ExitCodes: codes,
		Backoff: lifecycle.Backoff{Initial: 400 * time.Millisecond, Max: time.Second, Multiplier: 2, Jitter: 0.5}}
}

// startExecutor runs an executor whose pipeline touches "started" in dir and
// then waits for the file "gate".
func startExecutor(t *testing.T, w *lifecycletest.World, dir string, shutdownGrace time.Duration) (stop func()) {
	t.Helper()
	return startExecutorWith(t, w, dir, shutdownGrace, nil)
}

// startExecutorWith is startExecutor with a hook to adjust the config.
func startExecutorWith(t *testing.T, w *lifecycletest.World, dir string, shutdownGrace time.Duration, adjust func(*consumer.ExecutorConfig)) (stop func()) {
	t.Helper()
	w.Projects[lifecycletest.Project].Pipeline.Command = []string{"sh", "-c",
		`echo $$ > "$D/pid"; echo run >> "$D/runs"; touch "$D/started"; while [ ! -f "$D/gate" ]; do sleep 0.02; done; touch "$D/finished"`}
	w.Projects[lifecycletest.Project].Pipeline.Env = map[string]string{"D": dir}
	cfg := consumer.ExecutorConfig{
		Instance: "exec-1", Concurrency: 1, HeartbeatTTL: 2 * time.Second, HeartbeatRenew: 100 * time.Millisecond,
		ShutdownGrace: shutdownGrace, KillGrace: 200 * time.Millisecond, WorkDir: filepath.Join(dir, "work"),
		TakeWait: 100 * time.Millisecond, Logger: zaptest.NewLogger(t),
	}
	if adjust != nil {
		adjust(&cfg)
	}
	ex := consumer.NewExecutor(w.RDB, w.Queue, w.Projects, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// runExecutor runs one executor on w with cfg, quick heartbeats and takes
// filled in, until the test ends; the context is the executor's.
func runExecutor(t *testing.T, w *lifecycletest.World, cfg consumer.ExecutorConfig) context.Context {
	t.Helper()
	cfg.Instance, cfg.Concurrency, cfg.Logger = "exec-1", 1, zap.NewNop()
	cfg.HeartbeatTTL, cfg.HeartbeatRenew, cfg.TakeWait = 2*time.Second, 100*time.Millisecond, 100*time.Millisecond
	ex := consumer.NewExecutor(w.RDB, w.Queue, w.Projects, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return ctx
}
