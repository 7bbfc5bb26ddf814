package lifecycle_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
)

// A Redis restart loses a running pipeline's heartbeat while the run goes
// on until its next renewal. A second request for the ticket (re-pushed
// after the loss, or restored by a rolled-back queue) finding the start
// half done (Enqueued and InProgress labels both, as GitHub's add-then-
// remove leaves them between its two calls) must not start beside it: the
// executor waits out the restart grace, by when the first run has found its
// heartbeat gone and been killed. The chaos run's overlap at a Redis wipe
// (CI, stop 24) was this. With RestartGrace 0 the second run starts at once
// and both tick together (checked).
func TestNoRunStartsBesideOneARedisRestartLost(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	p := w.Projects[lifecycletest.Project]
	// Every run appends "pid unix-nanos" every 20 ms until the gate opens.
	p.Pipeline.Command = []string{"sh", "-c", `while [ ! -f "$D/gate" ]; do echo "$$ $(date +%s%N)" >> "$D/ticks"; sleep 0.02; done`}
	p.Pipeline.Env = map[string]string{"D": dir}
	renew := time.Second
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, inst := range []string{"exec-1", "exec-2"} {
		ex := consumer.NewExecutor(w.RDB, w.Queue, w.Projects, consumer.ExecutorConfig{
			Instance: inst, Concurrency: 1, HeartbeatTTL: 3 * time.Second, HeartbeatRenew: renew,
			ShutdownGrace: time.Second, KillGrace: 200 * time.Millisecond, WorkDir: filepath.Join(dir, inst),
			TakeWait: 100 * time.Millisecond, Logger: zaptest.NewLogger(t).Named(inst),
			RestartGrace: lifecycle.RestartGrace(renew, 0),
		})
		wg.Go(func() { _ = ex.Run(ctx) })
	}
	promoter := housekeeping.NewDelayedPromoter(w.Queue, housekeeping.DelayedPromoterConfig{Interval: 20 * time.Millisecond})
	wg.Go(func() { _ = promoter.Run(ctx) })

	n := w.ClaimIssue(t, "runs once at a time")
	ticks := filepath.Join(dir, "ticks")
	eventually.Wait(t, 15*time.Second, "the first run to tick", func() bool { return len(readTicks(t, ticks)) > 0 })
	first := readTicks(t, ticks)[0].pid
	if err := w.Sim.AddLabels(lifecycletest.Repo, n, w.Labels.Label(lifecycle.Enqueued)); err != nil {
		t.Fatal(err) // the start half done, as another consumer may read it
	}
	w.Redis.Restart() // everything lost, the first run's heartbeat with it
	req := lifecycle.PipelineRequest{ID: redislock.NewToken(), Ref: lifecycletest.Ref(n), Source: lifecycle.SourceWebhook,
		Attempt: 1, EnqueuedAt: time.Now().UTC()}
	if err := w.Queue.Push(t.Context(), req.Encode()); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 20*time.Second, "a second run to tick", func() bool {
		for _, tk := range readTicks(t, ticks) {
			if tk.pid != first {
				return true
			}
		}
		return false
	})
	// The first run dies when its renewal finds the heartbeat gone; only
	// then is its last tick known.
	pid, err := strconv.Atoi(first)
	if err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 15*time.Second, "the first run to be killed", func() bool {
		return syscall.Kill(pid, 0) == syscall.ESRCH
	})
	var lastFirst, firstSecond time.Time
	for _, tk := range readTicks(t, ticks) {
		switch {
		case tk.pid == first && tk.at.After(lastFirst):
			lastFirst = tk.at
		case tk.pid != first && (firstSecond.IsZero() || tk.at.Before(firstSecond)):
			firstSecond = tk.at
		}
	}
	if !firstSecond.After(lastFirst) {
		t.Fatalf("the second run started at %s while the first still ran (last tick %s): two runs at once",
			firstSecond.Format("15:04:05.000"), lastFirst.Format("15:04:05.000"))
	}
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 15*time.Second, "the ticket to reach Done", func() bool {
		is, _ := w.Sim.Issue(lifecycletest.Repo, n)
		return w.Labels.StateOf(is.Labels) == lifecycle.Done
	})
}

type tick struct {
	pid string
	at  time.Time
}

func readTicks(t *testing.T, path string) []tick {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []tick
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue // a line being written
		}
		ns, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, tick{pid: f[0], at: time.Unix(0, ns)})
	}
	return out
}
