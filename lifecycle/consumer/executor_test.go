package consumer_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

func TestRunThatLosesItsHeartbeatIsKilledAndWritesNothing(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	consumertest.StartExecutor(t, w, dir, time.Second)
	n := w.Sim.CreateIssue(lifecycletest.Repo, "taken over", "", "agent-smith")
	if res, err := w.Claims.Claim(t.Context(), lifecycletest.Ref(n), lifecycle.SourcePoll, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	eventually.Wait(t, 10*time.Second, "the pipeline to start", func() bool { return lifecycletest.Exists(filepath.Join(dir, "started")) })
	writesBefore := len(w.Sim.Writes())
	// Housekeeping (or anyone) took the run over.
	if err := w.RDB.Set(t.Context(), keys.Heartbeat(lifecycletest.Ref(n).Key()), "someone-else", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	// The executor drops its in-flight record when it is done with the run.
	eventually.Wait(t, 10*time.Second, "the executor to give up the run", func() bool {
		recs, _ := runstate.Runs(t.Context(), w.RDB)
		return len(recs) == 0
	})
	pid, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	var p int
	if _, err := fmt.Sscan(string(pid), &p); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(p, 0); err == nil {
		t.Error("the pipeline process is still alive after its run was taken over")
	}
	if got := len(w.Sim.Writes()); got != writesBefore {
		t.Errorf("%d label writes after losing the run, want none", got-writesBefore)
	}
	if s := w.State(t, n); s != lifecycle.InProgress {
		t.Errorf("state %s, want in-progress left for housekeeping", s)
	}
}

func TestShutdownHandsTheRunBack(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	stop := consumertest.StartExecutor(t, w, dir, 100*time.Millisecond)
	n := w.Sim.CreateIssue(lifecycletest.Repo, "interrupted", "", "agent-smith")
	if res, err := w.Claims.Claim(t.Context(), lifecycletest.Ref(n), lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	eventually.Wait(t, 10*time.Second, "the pipeline to start", func() bool { return lifecycletest.Exists(filepath.Join(dir, "started")) })
	stop()
	if s := w.State(t, n); s != lifecycle.Enqueued {
		t.Fatalf("state %s after shutdown, want enqueued (handed back)", s)
	}
	reqs := w.Requests(t)
	if len(reqs) != 1 || reqs[0].Source != lifecycle.SourceHandBack || reqs[0].Attempt != 1 {
		t.Errorf("queue = %+v, want one hand-back request with the same attempt", reqs)
	}
	if n, _ := w.RDB.Exists(t.Context(), keys.Heartbeat(lifecycletest.Ref(n).Key())).Result(); n != 0 {
		t.Error("heartbeat left behind after hand-back")
	}
}

// A pipeline's result survives transient tracker errors on the final write:
// the ticket reaches Done without the pipeline running again.
func TestFlakyTrackerDoesNotDiscardTheResult(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	n := w.Sim.CreateIssue(lifecycletest.Repo, "flaky tracker", "", "agent-smith")
	if res, err := w.Claims.Claim(t.Context(), lifecycletest.Ref(n), lifecycle.SourcePoll, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	w.Sim.SetFaults(trackersim.Faults{ErrorRate: 0.4, Seed: 7})
	consumertest.StartExecutor(t, w, dir, time.Second)
	eventually.Wait(t, 60*time.Second, "the ticket to reach done", func() bool { return w.State(t, n) == lifecycle.Done })
	b, _ := os.ReadFile(filepath.Join(dir, "runs"))
	if runs := strings.Count(string(b), "\n"); runs != 1 {
		t.Errorf("pipeline ran %d times, want 1", runs)
	}
}

// TestHalfDoneStartIsFinished: a start cut off between adding in-progress
// and removing enqueued (GitHub's two calls) leaves both labels; a request
// taken for it with no run holding the ticket runs it once and ends with
// one lifecycle label.
func TestHalfDoneStartIsFinished(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	n := w.Sim.CreateIssue(lifecycletest.Repo, "half started", "", "agent-smith", "keep")
	if res, err := w.Claims.Claim(t.Context(), lifecycletest.Ref(n), lifecycle.SourcePoll, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	if err := w.Sim.AddLabels(lifecycletest.Repo, n, lifecycletest.Label(lifecycle.InProgress)); err != nil { // the add that landed
		t.Fatal(err)
	}
	consumertest.StartExecutor(t, w, dir, time.Second)
	eventually.Wait(t, 20*time.Second, "the ticket to end done with one lifecycle label", func() bool {
		is, _ := w.Sim.Issue(lifecycletest.Repo, n)
		return slices.Equal(is.Labels, []string{"agent-smith", "keep", lifecycletest.Label(lifecycle.Done)})
	})
	b, _ := os.ReadFile(filepath.Join(dir, "runs"))
	if runs := strings.Count(string(b), "\n"); runs != 1 {
		t.Errorf("pipeline ran %d times, want 1", runs)
	}
}
