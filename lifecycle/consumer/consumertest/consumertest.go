// Package consumertest starts executors on a lifecycletest.World for the
// tests of the role packages (lifecycle, claim, consumer) that drive a
// ticket through real runs. It is apart from lifecycletest because it
// imports consumer and housekeeping, whose own tests import lifecycletest.
package consumertest

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
)

// RunWorld runs an executor (concurrency n, quick heartbeats, retry
// jitter fixed at its middle) and the delayed set's promoter on w until
// the test ends, and returns the recorder of the executor's events. The
// pipeline gets D=dir, where lifecycletest.CountingPipeline writes.
func RunWorld(t testing.TB, w *lifecycletest.World, dir string, n int) *lifecycletest.Recorder {
	t.Helper()
	return RunWorldClock(t, w, dir, n, nil)
}

// RunWorldClock is RunWorld with the executor's wall clock (nil: the
// default).
func RunWorldClock(t testing.TB, w *lifecycletest.World, dir string, n int, clock func() time.Time) *lifecycletest.Recorder {
	t.Helper()
	rec := &lifecycletest.Recorder{}
	p := w.Projects[lifecycletest.Project]
	p.Pipeline.Env = map[string]string{"D": dir}
	RunPromoted(t, w, consumer.ExecutorConfig{
		Instance: "exec-1", Concurrency: n, HeartbeatTTL: 2 * time.Second, HeartbeatRenew: 100 * time.Millisecond,
		ShutdownGrace: time.Second, KillGrace: 200 * time.Millisecond, WorkDir: filepath.Join(dir, "work"),
		TakeWait: 100 * time.Millisecond, Logger: zaptest.NewLogger(t), Observer: rec, LimitDelay: 100 * time.Millisecond,
		Rand: func() float64 { return 0.5 }, Clock: clock,
	})
	return rec
}

// RunPromoted runs an executor with cfg on w, and a promoter of the
// delayed set every 20 ms, until the test ends.
func RunPromoted(t testing.TB, w *lifecycletest.World, cfg consumer.ExecutorConfig) {
	t.Helper()
	ex := consumer.NewExecutor(w.RDB, w.Queue, w.Projects, cfg)
	promoter := housekeeping.NewDelayedPromoter(w.Queue, housekeeping.DelayedPromoterConfig{Interval: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = ex.Run(ctx) })
	wg.Go(func() { _ = promoter.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// StartExecutor runs an executor (concurrency 1) on w whose pipeline, with
// D=dir, writes its pid to $D/pid, appends a line to $D/runs, touches
// $D/started, waits for the file $D/gate and then touches $D/finished: a
// test holds a run in progress until it creates the gate. stop ends the
// executor (at most once; it also runs when the test ends).
func StartExecutor(t testing.TB, w *lifecycletest.World, dir string, shutdownGrace time.Duration) (stop func()) {
	t.Helper()
	return StartExecutorWith(t, w, dir, shutdownGrace, nil)
}

// StartExecutorWith is StartExecutor with a hook to adjust the config.
func StartExecutorWith(t testing.TB, w *lifecycletest.World, dir string, shutdownGrace time.Duration, adjust func(*consumer.ExecutorConfig)) (stop func()) {
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

// RunExecutor runs one executor on w with cfg, its instance, concurrency
// (1), logger, quick heartbeats and takes filled in, until the test ends;
// the context returned is the executor's.
func RunExecutor(t testing.TB, w *lifecycletest.World, cfg consumer.ExecutorConfig) context.Context {
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
