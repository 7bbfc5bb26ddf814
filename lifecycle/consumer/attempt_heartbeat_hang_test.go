package consumer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
}

func (h *hangHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *hangHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.hang.Load() {
			h.hanging.Add(1)
			defer h.hanging.Add(-1)
			<-ctx.Done()
			return ctx.Err()
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
			<-ctx.Done()
			return ctx.Err()
		}
		return next(ctx, cmds)
	}
}

// A heartbeat renewal that hangs must not hold back the kill: the
// pipeline dies at the trust deadline, before the heartbeat can expire and
// another replica take the run. Before the fix the renewal waited out its
// whole renew-interval timeout before the deadline was looked at, so with
// a 3 s renew interval and a 4 s TTL the pipeline was still running two
// seconds after its heartbeat could have expired.
func TestHangingRenewalDoesNotDelayTheKill(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	h := &hangHook{}
	rdb := redis.NewClient(w.RDB.Options())
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(h)
	const ttl = 4 * time.Second
	w.Projects[lifecycletest.Project].Pipeline.Command = []string{"sh", "-c",
		`echo $$ > "$D/pid"; touch "$D/started"; while [ ! -f "$D/gate" ]; do sleep 0.02; done`}
	w.Projects[lifecycletest.Project].Pipeline.Env = map[string]string{"D": dir}
	ex := consumer.NewExecutor(rdb, w.Queue, w.Projects, consumer.ExecutorConfig{
		Instance: "exec-1", Concurrency: 1, HeartbeatTTL: ttl, HeartbeatRenew: 3 * time.Second,
		KillGrace: 200 * time.Millisecond, WorkDir: filepath.Join(dir, "work"), TakeWait: 100 * time.Millisecond,
		CancelCheck: time.Hour,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(ctx) }()
	t.Cleanup(func() { cancel(); h.hang.Store(false); <-done })

	n := w.Sim.CreateIssue(lifecycletest.Repo, "partitioned", "", "agent-smith")
	if res, err := w.Claims.Claim(t.Context(), lifecycletest.Ref(n), lifecycle.SourcePoll, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	eventually.Wait(t, 10*time.Second, "the pipeline to start", func() bool { return exists(filepath.Join(dir, "started")) })
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
	eventually.Wait(t, 15*time.Second, "the pipeline to be killed", func() bool { return syscall.Kill(pid, 0) != nil })
	h.hang.Store(false) // the partition heals: the executor's clean-up goes through
	if at, expires := time.Now(), last.Add(ttl); !at.Before(expires) {
		t.Errorf("pipeline killed %s after its heartbeat could expire (TTL %s)", at.Sub(expires), ttl)
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
// once, not when the renewal gives up: before the fix the heartbeat loop
// saw the lapse only between renewals, so a renewal hanging for its 3 s
// timeout kept the pipeline running that long after the replica stopped
// trusting its own liveness.
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
	eventually.Wait(t, 10*time.Second, "the pipeline to start", func() bool { return exists(filepath.Join(dir, "started")) })
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
	// The hanging renewal's own timeout (3 s) is the bound the bug hit.
	if d := time.Since(lapsed); d >= 2*time.Second {
		t.Errorf("pipeline killed %s after the liveness lapse, want well before the hanging renewal's 3 s timeout", d)
	}
}
