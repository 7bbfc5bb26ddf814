package consumer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
)

// hangHook makes every command hang until its context ends once hang is
// set, as a Redis behind a partition that drops packets answers nothing;
// until then it records when the last command started.
type hangHook struct {
	hang    atomic.Bool
	hanging atomic.Int32 // commands hanging now
	mu      sync.Mutex
	lastOK  time.Time
	hungTil []time.Time // the context deadline of each command that hung
}

// hangUntilDone records ctx's deadline and blocks until ctx ends.
func (h *hangHook) hangUntilDone(ctx context.Context) error {
	h.hanging.Add(1)
	defer h.hanging.Add(-1)
	if d, ok := ctx.Deadline(); ok {
		h.mu.Lock()
		h.hungTil = append(h.hungTil, d)
		h.mu.Unlock()
	}
	<-ctx.Done()
	return ctx.Err()
}

func (h *hangHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *hangHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.hang.Load() {
			return h.hangUntilDone(ctx)
		}
		h.mu.Lock()
		h.lastOK = time.Now()
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (h *hangHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.hang.Load() {
			return h.hangUntilDone(ctx)
		}
		return next(ctx, cmds)
	}
}

// A heartbeat renewal that hangs must not hold back the kill: the
// pipeline dies at the trust deadline, before the heartbeat can expire and
// another replica take the run. The test synchronises on the executor's
// HeartbeatLostSignal, not on wall-clock margins: the signal carries the
// trust deadline, which must come before the heartbeat's expiry (its last
// write + TTL), and every renewal that hung must have been given up by that
// deadline (its context's deadline), so nothing waits out a renew interval
// (3 s here, past the 4 s TTL) before the kill. The pipeline must then die.
func TestHangingRenewalDoesNotDelayTheKill(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	h := &hangHook{}
	rdb := redis.NewClient(w.RDB.Options())
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(h)
	const ttl = 4 * time.Second
	type heartbeatLost struct {
		trustedUntil time.Time
		cause        error
		hung         []time.Time
	}
	lost := make(chan heartbeatLost, 1)
	w.Projects[lifecycletest.Project].Pipeline.Command = []string{"sh", "-c",
		`echo $$ > "$D/pid"; touch "$D/started"; while [ ! -f "$D/gate" ]; do sleep 0.02; done`}
	w.Projects[lifecycletest.Project].Pipeline.Env = map[string]string{"D": dir}
	ex := consumer.NewExecutor(rdb, w.Queue, w.Projects, consumer.ExecutorConfig{
		Instance: "exec-1", Concurrency: 1, HeartbeatTTL: ttl, HeartbeatRenew: 3 * time.Second,
		KillGrace: 200 * time.Millisecond, WorkDir: filepath.Join(dir, "work"), TakeWait: 100 * time.Millisecond,
		CancelCheck: time.Hour,
		HeartbeatLostSignal: func(trustedUntil time.Time, cause error) {
			h.mu.Lock()
			hung := slices.Clone(h.hungTil) // the commands that hung before the run gave up
			h.mu.Unlock()
			lost <- heartbeatLost{trustedUntil, cause, hung}
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(ctx) }()
	t.Cleanup(func() { cancel(); h.hang.Store(false); <-done })

	n := w.Sim.CreateIssue(lifecycletest.Repo, "partitioned", "", "agent-smith")
	if res, err := w.Claims.Claim(t.Context(), lifecycletest.Ref(n), lifecycle.SourcePoll, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	eventually.Wait(t, 10*time.Second, "the pipeline to start", func() bool { return lifecycletest.Exists(filepath.Join(dir, "started")) })
	h.hang.Store(true)
	h.mu.Lock()
	last := h.lastOK // no later than the heartbeat's last write
	h.mu.Unlock()
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil {
		t.Fatal(err)
	}
	var sig heartbeatLost
	select {
	case sig = <-lost:
	case <-time.After(15 * time.Second):
		t.Fatal("the run never gave up its heartbeat while Redis hung")
	}
	eventually.Wait(t, 15*time.Second, "the pipeline to be killed", func() bool { return syscall.Kill(pid, 0) != nil })
	h.hang.Store(false) // the partition heals: the executor's clean-up goes through
	t.Logf("heartbeat given up: %v", sig.cause)
	if expires := last.Add(ttl); !sig.trustedUntil.Before(expires) {
		t.Errorf("trust deadline %s is not before the heartbeat's expiry %s (TTL %s)",
			sig.trustedUntil.Format(time.StampMilli), expires.Format(time.StampMilli), ttl)
	}
	if len(sig.hung) == 0 {
		t.Error("no command hung with a deadline: the test did not exercise a hanging renewal")
	}
	// A renewal's context deadline is the trust deadline read at the
	// renewal's start plus the time to create the context (microseconds);
	// one that waits out the renew interval ends 2.4 s past it here.
	const ctxSetup = 250 * time.Millisecond
	for _, d := range sig.hung {
		if d.After(sig.trustedUntil.Add(ctxSetup)) {
			t.Errorf("a hanging command waited until %s, past the trust deadline %s: it held back the kill",
				d.Format(time.StampMilli), sig.trustedUntil.Format(time.StampMilli))
		}
	}
}

// lapsing is a Liveness that lapses when told to.
type lapsing struct{ lost chan struct{} }

func (l *lapsing) Valid() bool {
	select {
	case <-l.lost:
		return false
	default:
		return true
	}
}
func (l *lapsing) Lost() <-chan struct{} { return l.lost }

// A liveness lapse while a heartbeat renewal hangs kills the pipeline at
// once, not when the renewal gives up: a heartbeat loop that saw the lapse
// only between renewals would keep the pipeline running for the hanging
// renewal's 3 s timeout after the replica stopped trusting its own
// liveness.
func TestLivenessLapseDuringAHangingRenewalKills(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	h := &hangHook{}
	rdb := redis.NewClient(w.RDB.Options())
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(h)
	live := &lapsing{lost: make(chan struct{})}
	w.Projects[lifecycletest.Project].Pipeline.Command = []string{"sh", "-c",
		`echo $$ > "$D/pid"; touch "$D/started"; while [ ! -f "$D/gate" ]; do sleep 0.02; done`}
	w.Projects[lifecycletest.Project].Pipeline.Env = map[string]string{"D": dir}
	ex := consumer.NewExecutor(rdb, w.Queue, w.Projects, consumer.ExecutorConfig{
		Instance: "exec-1", Concurrency: 1, HeartbeatTTL: time.Minute, HeartbeatRenew: 3 * time.Second,
		KillGrace: 200 * time.Millisecond, WorkDir: filepath.Join(dir, "work"), TakeWait: 100 * time.Millisecond,
		CancelCheck: time.Hour, Liveness: live,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(ctx) }()
	t.Cleanup(func() { cancel(); h.hang.Store(false); <-done })
	n := w.Sim.CreateIssue(lifecycletest.Repo, "lapsing", "", "agent-smith")
	if res, err := w.Claims.Claim(t.Context(), lifecycletest.Ref(n), lifecycle.SourcePoll, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	eventually.Wait(t, 10*time.Second, "the pipeline to start", func() bool { return lifecycletest.Exists(filepath.Join(dir, "started")) })
	h.hang.Store(true)
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil {
		t.Fatal(err)
	}
	// Wait until the first renewal (at 3 s) is hanging, then lapse.
	eventually.Wait(t, 10*time.Second, "a renewal to hang", func() bool { return h.hanging.Load() > 0 })
	lapsed := time.Now()
	close(live.lost)
	eventually.Wait(t, 15*time.Second, "the pipeline to be killed", func() bool { return syscall.Kill(pid, 0) != nil })
	h.hang.Store(false)
	// The hanging renewal's own timeout (3 s) is the bound a loop blind to
	// the lapse would reach.
	if d := time.Since(lapsed); d >= 2*time.Second {
		t.Errorf("pipeline killed %s after the liveness lapse, want well before the hanging renewal's 3 s timeout", d)
	}
}
