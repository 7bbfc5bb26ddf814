package consumer_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// scriptsOnKeyHook counts the scripts a client runs whose first key is
// key: the run's heartbeat renewals, while nothing else of the run talks
// to Redis.
type scriptsOnKeyHook struct {
	key string
	n   atomic.Int64
}

func (h *scriptsOnKeyHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *scriptsOnKeyHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); (cmd.Name() == "evalsha" || cmd.Name() == "eval") && len(a) > 3 && a[3] == h.key {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h *scriptsOnKeyHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A move to in-progress that takes longer than the heartbeat's TTL (the
// tracker's rate limits, retries) does not lose the run: the heartbeat is
// renewed from the take on, so the StaleJobDetector leaves the run alone
// meanwhile and the pipeline starts once the move lands. The heartbeat
// used to start only after the move, so it expired while the move waited,
// and the run was given up (stagedorg/app#6 in the staged chaos run).
func TestSlowStartKeepsTheHeartbeat(t *testing.T) {
	w := lifecycletest.New(t, 1)
	dir := t.TempDir()
	p := w.Projects[lifecycletest.Project]
	p.Pipeline.Command = lifecycletest.CountingPipeline("0")
	p.Pipeline.Env = map[string]string{"D": dir}
	n := w.ClaimIssue(t, "slow start")
	ref := lifecycletest.Ref(n)

	// The executor's first write to the issue, its move to in-progress,
	// waits in the tracker until the test lets it through.
	held, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	letGo := func() { releaseOnce.Do(func() { close(release) }) }
	w.Sim.BeforeAPIWrite(lifecycletest.Repo, n, 0, func() { close(held); <-release })

	const ttl, renew = time.Second, 100 * time.Millisecond
	h := &scriptsOnKeyHook{key: keys.Heartbeat(ref.Key())}
	rdb := redis.NewClient(w.RDB.Options())
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(h)
	// The replica's liveness key, which the StaleJobDetector also asks.
	if err := w.RDB.Set(t.Context(), keys.Instance("exec-1"), "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	rec := &lifecycletest.Recorder{}
	ex := consumer.NewExecutor(rdb, w.Queue, w.Projects, consumer.ExecutorConfig{
		Instance: "exec-1", Concurrency: 1, HeartbeatTTL: ttl, HeartbeatRenew: renew,
		KillGrace: 200 * time.Millisecond, WorkDir: filepath.Join(dir, "work"), TakeWait: 100 * time.Millisecond,
		Logger: zaptest.NewLogger(t), Observer: rec,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	t.Cleanup(letGo) // first: a held move would hold the executor's stop

	eventually.Wait(t, 10*time.Second, "the move to in-progress to reach the tracker", func() bool {
		select {
		case <-held:
			return true
		default:
			return false
		}
	})
	// Renewed every 100 ms, 3×TTL/renew renewals take longer than the TTL
	// three times over; a heartbeat not renewed is gone well before.
	from := h.n.Load()
	eventually.Wait(t, 10*time.Second, "the held move to outlast the heartbeat's TTL", func() bool {
		return h.n.Load()-from >= int64(3*ttl/renew) || w.RDB.Exists(t.Context(), h.key).Val() == 0
	})
	d := housekeeping.NewStaleJobDetector(w.RDB, w.Claims, housekeeping.StaleJobDetectorConfig{Logger: zaptest.NewLogger(t)})
	if err := d.FastCycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if holder, _, err := runstate.Holder(t.Context(), w.RDB, ref); err != nil || holder == "" {
		t.Fatalf("heartbeat holder %q %v while the move waits, want the run's", holder, err)
	}
	letGo()
	w.WaitOutcome(t, rec, n, lifecycle.Done, "succeeded")
	if got := lifecycletest.Runs(t, dir); !slices.Equal(got, []string{"1"}) {
		t.Errorf("runs %q, want one run at attempt 1", got)
	}
}
