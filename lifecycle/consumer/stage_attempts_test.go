package consumer_test

import (
	"context"
	"errors"
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
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

var errCut = errors.New("replica cut off (test)")

// cutAtStartOverHook cuts a replica off Redis at the executor's StartOver
// (the pipelined HDEL of the attempts hash that follows a stage's label
// write): that command and every one after it fail, as they would for a
// replica killed right after the label write.
type cutAtStartOverHook struct{ cut atomic.Bool }

func (h *cutAtStartOverHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *cutAtStartOverHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.cut.Load() {
			cmd.SetErr(errCut)
			return errCut
		}
		return next(ctx, cmd)
	}
}
func (h *cutAtStartOverHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if a := cmds[0].Args(); cmds[0].Name() == "hdel" && len(a) > 1 && a[1] == keys.Attempts() {
			h.cut.Store(true)
		}
		if h.cut.Load() {
			for _, c := range cmds {
				c.SetErr(errCut)
			}
			return errCut
		}
		return next(ctx, cmds)
	}
}

// A replica that dies between a stage's label write to the next stage and
// its StartOver leaves the next stage no count of the stage that ran: the
// EnqueuedReconciler's re-push runs the next stage at attempt 1 with all
// its attempts. The count used to be reset only after the write, so the
// re-push took the dead run's attempt (plan's last, 2): implement ran
// once, at attempt 2, and its retryable failure failed the ticket
// (stagedorg/app#11 in the staged chaos run started its test stage at
// attempt 3).
func TestStageAttemptsDoNotCarryIntoTheNextStage(t *testing.T) {
	w := lifecycletest.New(t, 2)
	dir := t.TempDir()
	p := w.Projects[lifecycletest.Project]
	// Each stage fails its first run (retried) and succeeds its second.
	cmd := []string{"sh", "-c", `echo "$AGENTSMITH_STAGE:$AGENTSMITH_ATTEMPT" >> "$D/runs"; [ "$(grep -c "^$AGENTSMITH_STAGE:" "$D/runs")" -ge 2 ] || exit 3`}
	retry := lifecycle.RetryPolicy{ExitCodes: []int{3}, Backoff: lifecycle.Backoff{Initial: 100 * time.Millisecond, Max: time.Second, Multiplier: 2}}
	p.Stages = []lifecycle.Stage{{Name: "plan", Command: cmd, Timeout: time.Minute, MaxAttempts: 2, Retry: retry},
		{Name: "implement", Command: cmd, Timeout: time.Minute, MaxAttempts: 2, Retry: retry}}
	p.Pipeline.Env = map[string]string{"D": dir}

	h := &cutAtStartOverHook{}
	rdb := redis.NewClient(w.RDB.Options())
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(h)
	// Started after the client copied w.RDB's options, which go-redis
	// writes to as w.RDB dials.
	promoter := housekeeping.NewDelayedPromoter(w.Queue, housekeeping.DelayedPromoterConfig{Interval: 20 * time.Millisecond})
	pctx, pcancel := context.WithCancel(context.Background())
	var pwg sync.WaitGroup
	pwg.Go(func() { _ = promoter.Run(pctx) })
	t.Cleanup(func() { pcancel(); pwg.Wait() })
	ex := consumer.NewExecutor(rdb, lifecycletest.QueueOn(rdb), w.Projects, consumer.ExecutorConfig{
		Instance: "exec-dies", Concurrency: 1, HeartbeatTTL: time.Second, HeartbeatRenew: 100 * time.Millisecond,
		KillGrace: 200 * time.Millisecond, WorkDir: filepath.Join(dir, "work"), TakeWait: 100 * time.Millisecond,
		Logger: zaptest.NewLogger(t), Rand: func() float64 { return 0.5 },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(ctx) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)

	n := w.ClaimIssue(t, "two stages")
	ref := lifecycletest.Ref(n)
	eventually.Wait(t, 20*time.Second, "the replica cut off after plan's label write to implement", h.cut.Load)
	stop()
	if s := w.State(t, n); s != lifecycle.Enqueued {
		t.Fatalf("state %s after the cut, want enqueued (at implement)", s)
	}
	if got := lifecycletest.Runs(t, dir); !slices.Equal(got, []string{"plan:1", "plan:2"}) {
		t.Fatalf("runs %q before the cut, want plan's two attempts", got)
	}
	eventually.Wait(t, 10*time.Second, "the dead run's heartbeat to expire", func() bool {
		return w.RDB.Exists(t.Context(), keys.Heartbeat(ref.Key())).Val() == 0
	})

	// The repair: the EnqueuedReconciler finds the ticket without its
	// request and re-pushes it once its grace passed.
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	claims := claim.NewService(w.RDB, w.Queue, w.Projects, claim.Config{Instance: "hk", Labels: w.Labels, Clock: clock, Logger: zaptest.NewLogger(t)})
	r := housekeeping.NewEnqueuedReconciler(w.RDB, w.Queue, claims, housekeeping.EnqueuedReconcilerConfig{Grace: time.Minute, Clock: clock})
	if err := r.SlowCycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	if err := r.SlowCycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if q := w.Requests(t); len(q) != 1 || q[0].Stage != "implement" || q[0].Attempt != 1 {
		t.Errorf("re-pushed %+v, want implement's request at attempt 1", q)
	}

	consumertest.RunWorld(t, w, dir, 1)
	eventually.Wait(t, 20*time.Second, "the ticket to end", func() bool { return w.State(t, n).Terminal() })
	if s := w.State(t, n); s != lifecycle.Done {
		t.Errorf("state %s, want done", s)
	}
	if got, want := lifecycletest.Runs(t, dir), []string{"plan:1", "plan:2", "implement:1", "implement:2"}; !slices.Equal(got, want) {
		t.Errorf("runs %q, want %q", got, want)
	}
}
