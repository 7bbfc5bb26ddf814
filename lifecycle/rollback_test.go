package lifecycle_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
)

// Redis restored from an older snapshot brings back queue entries of
// tickets that have ended since (Done, Failed) and of one whose run is
// going on now (InProgress). Labels are the truth: the executor reads the
// ticket before it runs a request and drops each of them without running
// the pipeline or writing a label; an Enqueued ticket queued behind them
// still runs (the control that the executor was taking work at all).
func TestRestoredRequestsOfEndedTicketsAreDropped(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	stale := map[int][]string{
		w.Sim.CreateIssue(lifecycletest.Repo, "done", "", "agent-smith", lifecycletest.Label(lifecycle.Done)):          {"agent-smith", lifecycletest.Label(lifecycle.Done)},
		w.Sim.CreateIssue(lifecycletest.Repo, "failed", "", "agent-smith", lifecycletest.Label(lifecycle.Failed)):      {"agent-smith", lifecycletest.Label(lifecycle.Failed)},
		w.Sim.CreateIssue(lifecycletest.Repo, "running", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress)): {"agent-smith", lifecycletest.Label(lifecycle.InProgress)},
	}
	live := w.Sim.CreateIssue(lifecycletest.Repo, "enqueued", "", "agent-smith", lifecycletest.Label(lifecycle.Enqueued))
	push := func(n int) {
		req := lifecycle.PipelineRequest{ID: "restored-" + lifecycletest.Ref(n).ID, Ref: lifecycletest.Ref(n), Source: lifecycle.SourceWebhook,
			Attempt: 1, EnqueuedAt: time.Now().Add(-time.Minute).UTC()}
		if err := w.Queue.Push(t.Context(), req.Encode()); err != nil {
			t.Fatal(err)
		}
	}
	for n := range stale {
		push(n)
	}
	push(live)
	consumertest.StartExecutor(t, w, dir, time.Second)
	eventually.Wait(t, 10*time.Second, "the Enqueued ticket's request to run", func() bool { return lifecycletest.Exists(filepath.Join(dir, "started")) })
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 10*time.Second, "the Enqueued ticket to reach done", func() bool { return w.State(t, live) == lifecycle.Done })
	eventually.Wait(t, 10*time.Second, "the queue to empty", func() bool { return len(w.Requests(t)) == 0 })
	if b, _ := os.ReadFile(filepath.Join(dir, "runs")); string(b) != "run\n" {
		t.Errorf("pipeline runs %q, want exactly one (the Enqueued ticket's)", b)
	}
	for n, want := range stale {
		is, _ := w.Sim.Issue(lifecycletest.Repo, n)
		if len(is.Labels) != len(want) || is.Labels[0] != want[0] || is.Labels[1] != want[1] {
			t.Errorf("ticket %d labels %q, want %q untouched", n, is.Labels, want)
		}
	}
}
