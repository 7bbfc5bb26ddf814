package consumer_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runguard"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/trust"
)

// guardedConfig is an executor config whose pipelines run under a real run
// guard (this test binary, TestMain) checking every 100 ms, with the
// pipeline's D=dir.
func guardedConfig(t *testing.T, w *lifecycletest.World, dir string) consumer.ExecutorConfig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w.Projects[lifecycletest.Project].Pipeline.Env = map[string]string{"D": dir}
	return consumer.ExecutorConfig{Instance: "exec-1", Concurrency: 1, HeartbeatTTL: 2 * time.Second, HeartbeatRenew: 200 * time.Millisecond,
		KillGrace: 200 * time.Millisecond, WorkDir: filepath.Join(dir, "work"), TakeWait: 100 * time.Millisecond,
		CancelCheck: time.Hour, Logger: zaptest.NewLogger(t),
		Guard: &runguard.Launcher{Exe: exe, Redis: runguard.Redis{Addrs: []string{w.Redis.Addr()}}, Check: 100 * time.Millisecond}}
}

// A run guard that does not start the pipeline while the run is still the
// executor's own fails for the daemon, not for the pipeline: here it
// watches a liveness key (instance "gone*1") the executor does not, as a
// guard and an executor that measure a trust window apart would disagree.
// The ticket is handed back with the same attempt, the guard's reason in
// the transition; a refusal that persists fails the attempt after
// MaxRefusedStarts, the reason (escaped) in its comment. It used to be
// recorded as the pipeline exiting 125, which failed the ticket.
func TestGuardRefusedStartIsHandedBackNotFailed(t *testing.T) {
	const instance = "gone*1"
	setup := func(t *testing.T, also func(*lifecycletest.World) lifecycle.Observer) (*lifecycletest.World, string, *lifecycletest.Recorder) {
		w := lifecycletest.New(t, 3)
		dir := t.TempDir()
		w.Projects[lifecycletest.Project].Pipeline.Command = []string{"sh", "-c", `echo "$AGENTSMITH_ATTEMPT" >> "$D/ran"`}
		cfg := guardedConfig(t, w, dir)
		cfg.Guard.Instance, cfg.Guard.Presence = instance, trust.Fraction(time.Hour, trust.DefaultPresenceTrust)
		rec := &lifecycletest.Recorder{}
		cfg.Observer, cfg.RefusedStartDelay = rec, 50*time.Millisecond
		if also != nil {
			cfg.Observer = lifecycle.Observers{also(w), rec}
		}
		consumertest.RunPromoted(t, w, cfg)
		return w, dir, rec
	}
	t.Run("once", func(t *testing.T) {
		// The liveness key appears as the first refusal is handed back,
		// before the next take can run the guard again however slow the
		// machine.
		var once sync.Once
		w, dir, rec := setup(t, func(w *lifecycletest.World) lifecycle.Observer {
			return observeFunc(func(ev lifecycle.Event) {
				if ev.Outcome == "handed back" {
					once.Do(func() {
						if err := w.RDB.Set(context.Background(), keys.Instance(instance), "x", time.Hour).Err(); err != nil {
							t.Error(err)
						}
					})
				}
			})
		})
		n := w.ClaimIssue(t, "refused once")
		ev := eventually.Value(t, 20*time.Second, "the refused start handed back", func() (lifecycle.Event, bool) {
			return rec.Find("handed back")
		})
		if ev.Attempt != 1 || !strings.Contains(ev.Reason, "the daemon's liveness key ("+instance+") is gone") {
			t.Errorf("hand-back %+v: want attempt 1 and the guard's reason", ev)
		}
		// With the liveness key there, the next take of the same attempt runs.
		w.WaitOutcome(t, rec, n, lifecycle.Done, "succeeded")
		if b, err := os.ReadFile(filepath.Join(dir, "ran")); err != nil || string(b) != "1\n" {
			t.Errorf("attempts run %q (%v), want attempt 1 once", b, err)
		}
		if _, failed := rec.Find("failed"); failed {
			t.Error("the guard's refusal was recorded as a failure")
		}
	})
	t.Run("persists", func(t *testing.T) {
		w, dir, rec := setup(t, nil)
		n := w.ClaimIssue(t, "refused always")
		w.WaitOutcome(t, rec, n, lifecycle.Failed, "failed")
		if lifecycletest.Exists(filepath.Join(dir, "ran")) {
			t.Error("a pipeline ran")
		}
		if got := strings.Count(strings.Join(rec.Outcomes(), "\n"), "handed back"); got != consumer.MaxRefusedStarts-1 {
			t.Errorf("%d hand-backs, want %d", got, consumer.MaxRefusedStarts-1)
		}
		cs := w.Comments(t, n)
		if len(cs) != 1 || !strings.Contains(cs[0], "the run guard did not start the pipeline (3 times in a row)") ||
			!strings.Contains(cs[0], `run guard: the daemon's liveness key (gone\*1) is gone`) {
			t.Errorf("comments %q: want the guard's reason, escaped", cs)
		}
	})
}

// observeFunc is a function as a lifecycle.Observer.
type observeFunc func(lifecycle.Event)

func (f observeFunc) Observe(ev lifecycle.Event) { f(ev) }
