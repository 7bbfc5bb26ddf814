package consumer_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runguard"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/sandbox"
)

// TestMain lets the test binary be the run guard: `consumer.test guard`
// runs runguard.Main, as `agentsmithd guard` does; and a sandbox's init.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "guard" {
		os.Exit(runguard.Main(os.NewFile(3, "orders"), os.NewFile(4, "report"), os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitArg {
		os.Exit(sandbox.Init())
	}
	os.Exit(m.Run())
}

// dropHeartbeatHook deletes the run's heartbeat once, right before the
// executor records the attempt's log file: after the executor's own check
// before the start, before its run guard's. So the heartbeat lapses in
// that window, as it did in a staged chaos run where the move to
// in-progress waited out tracker rate limits longer than the heartbeat's
// TTL (stagedorg/app#6).
type dropHeartbeatHook struct {
	rdb     *redis.Client
	key     string
	dropped atomic.Bool
}

func (h *dropHeartbeatHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *dropHeartbeatHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *dropHeartbeatHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if len(c.Args()) > 1 && strings.Contains(c.String(), keys.RunLogs("")) && !h.dropped.Swap(true) {
				if err := h.rdb.Del(ctx, h.key).Err(); err != nil {
					return err
				}
			}
		}
		return next(ctx, cmds)
	}
}

// A run guard that finds the run no longer its own before the pipeline
// starts refuses to start it (exit 125, runguard.Main). Nothing ran: the
// run is lost, not failed. The executor writes no outcome and no label,
// and leaves the ticket to the repairs, which run it again; it must not
// record the refusal as the pipeline's failure (re-taking the lapsed lock
// to do so), which ended the ticket Failed with "exit status 125" without
// its stage ever running.
func TestGuardRefusedStartIsALostRunNotAFailure(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	n := w.Sim.CreateIssue(lifecycletest.Repo, "refused", "", "agent-smith")
	ref := lifecycletest.Ref(n)
	h := &dropHeartbeatHook{rdb: w.RDB, key: keys.Heartbeat(ref.Key())}
	rdb := redis.NewClient(w.RDB.Options())
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(h)
	core, logs := observer.New(zapcore.InfoLevel)
	w.Projects[lifecycletest.Project].Pipeline.Command = []string{"sh", "-c", `touch "$D/ran"`}
	w.Projects[lifecycletest.Project].Pipeline.Env = map[string]string{"D": dir}
	ex := consumer.NewExecutor(rdb, w.Queue, w.Projects, consumer.ExecutorConfig{
		Instance: "exec-1", Concurrency: 1, HeartbeatTTL: 10 * time.Second, HeartbeatRenew: 5 * time.Second,
		KillGrace: 200 * time.Millisecond, WorkDir: filepath.Join(dir, "work"), TakeWait: 100 * time.Millisecond,
		CancelCheck: time.Hour, Logger: zap.New(core),
		Guard: &runguard.Launcher{Exe: exe, Redis: runguard.Redis{Addrs: []string{w.Redis.Addr()}}, Check: 100 * time.Millisecond},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	if res, err := w.Claims.Claim(t.Context(), ref, lifecycle.SourcePoll, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	// Either way the executor ends the attempt: giving the run up as lost,
	// or recording an outcome and writing it.
	eventually.Wait(t, 15*time.Second, "the attempt to end", func() bool {
		outs, _ := runstate.Outcomes(t.Context(), w.RDB)
		tk, err := w.Projects[lifecycletest.Project].Tracker.Get(t.Context(), ref)
		return logs.FilterMessageSnippet("run lost its ownership").Len() > 0 || len(outs) > 0 ||
			err == nil && w.Labels.StateOf(tk.Labels) == lifecycle.Failed
	})
	if !h.dropped.Load() {
		t.Fatal("the heartbeat was never dropped: the test proves nothing")
	}
	if lifecycletest.Exists(filepath.Join(dir, "ran")) {
		t.Fatal("the pipeline ran: the guard did not refuse, the test proves nothing")
	}
	outs, err := runstate.Outcomes(t.Context(), w.RDB)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) > 0 {
		t.Errorf("the guard's refusal was recorded as the run's outcome: %+v", outs[0])
	}
	tk, err := w.Projects[lifecycletest.Project].Tracker.Get(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if s := w.Labels.StateOf(tk.Labels); s != lifecycle.InProgress {
		t.Errorf("state %s after a refused start, want in-progress (left to the repairs)", s)
	}
}
