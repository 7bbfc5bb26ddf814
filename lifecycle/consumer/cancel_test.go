package consumer_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// startCancellable runs the gated executor with a fast cancel check and an
// event recorder.
func startCancellable(t *testing.T, w *lifecycletest.World, dir string) *lifecycletest.Recorder {
	t.Helper()
	rec := &lifecycletest.Recorder{}
	consumertest.StartExecutorWith(t, w, dir, time.Second, func(c *consumer.ExecutorConfig) {
		c.CancelCheck = 50 * time.Millisecond
		c.Observer = rec
	})
	return rec
}

func claimAndStart(t *testing.T, w *lifecycletest.World, dir, title string) int {
	t.Helper()
	n := w.Sim.CreateIssue(lifecycletest.Repo, title, "", "agent-smith")
	if res, err := w.Claims.Claim(t.Context(), lifecycletest.Ref(n), lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	eventually.Wait(t, 10*time.Second, "the pipeline to start", func() bool { return lifecycletest.Exists(filepath.Join(dir, "started")) })
	return n
}

// assertCancelled checks the end state of a cancelled ticket: Failed with
// one comment naming the cause, no cancel request or attempt count left, and
// a transition Event with outcome "cancelled".
func assertCancelled(t *testing.T, w *lifecycletest.World, rec *lifecycletest.Recorder, n int, from lifecycle.State, cause string) {
	t.Helper()
	ref := lifecycletest.Ref(n)
	eventually.Wait(t, 10*time.Second, "the ticket to fail", func() bool { return w.State(t, n) == lifecycle.Failed })
	is, _ := w.Sim.Issue(lifecycletest.Repo, n)
	if len(is.Comments) != 1 || !strings.Contains(is.Comments[0].Body, cause) {
		t.Errorf("comments %+v, want one naming %q", is.Comments, cause)
	}
	eventually.Wait(t, 5*time.Second, "the run to be released", func() bool {
		n, _ := w.RDB.Exists(t.Context(), keys.Cancel(ref.Key()), keys.Heartbeat(ref.Key())).Result()
		att, _ := runstate.LastAttempt(t.Context(), w.RDB, ref)
		return n == 0 && att == 0
	})
	found := false
	for _, ev := range rec.Events() {
		if ev.Kind == lifecycle.EventTransition && ev.Ref == ref && ev.From == from && ev.To == lifecycle.Failed {
			found = ev.Outcome == "cancelled" && ev.Reason == cause
		}
	}
	if !found {
		t.Errorf("no %s → failed event with outcome cancelled and reason %q in %+v", from, cause, rec.Events())
	}
}

func pipelineGone(t *testing.T, dir string) {
	t.Helper()
	pid, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	var p int
	if _, err := fmt.Sscan(string(pid), &p); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 5*time.Second, "the pipeline process to die", func() bool { return syscall.Kill(p, 0) != nil })
	if lifecycletest.Exists(filepath.Join(dir, "finished")) {
		t.Error("the pipeline ran to its end")
	}
}

func TestClosingARunningTicketCancelsIt(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	rec := startCancellable(t, w, dir)
	n := claimAndStart(t, w, dir, "close me")
	if err := w.Sim.SetOpen(lifecycletest.Repo, n, false); err != nil {
		t.Fatal(err)
	}
	// What the receiver (or housekeeping) writes when it sees the close.
	if err := runstate.RequestCancel(t.Context(), w.RDB, lifecycletest.Ref(n), lifecycle.CauseClosed, 0); err != nil {
		t.Fatal(err)
	}
	assertCancelled(t, w, rec, n, lifecycle.InProgress, lifecycle.CauseClosed)
	pipelineGone(t, dir)
}

func TestOperatorCancelStopsARun(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	rec := startCancellable(t, w, dir)
	n := claimAndStart(t, w, dir, "operator stops me")
	cause := lifecycle.CtlCause("wrong repository")
	if err := runstate.RequestCancel(t.Context(), w.RDB, lifecycletest.Ref(n), cause, time.Hour); err != nil {
		t.Fatal(err)
	}
	assertCancelled(t, w, rec, n, lifecycle.InProgress, "cancelled by agentsmithctl: wrong repository")
	pipelineGone(t, dir)
}

// A tracker cause the ticket does not confirm (a late webhook) is dropped,
// and the run goes on to Done.
func TestUnconfirmedCancelHintIsIgnored(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	startCancellable(t, w, dir)
	n := claimAndStart(t, w, dir, "still wanted")
	ref := lifecycletest.Ref(n)
	if err := runstate.RequestCancel(t.Context(), w.RDB, ref, lifecycle.CauseUntriggered, 0); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 5*time.Second, "the hint to be dropped", func() bool {
		n, _ := w.RDB.Exists(t.Context(), keys.Cancel(ref.Key())).Result()
		return n == 0
	})
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 10*time.Second, "the ticket to be done", func() bool { return w.State(t, n) == lifecycle.Done })
}

// A request taken after its trigger was removed fails without running; a
// fresh trigger runs the ticket again.
func TestRequestCancelledBeforeItRuns(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	n := w.Sim.CreateIssue(lifecycletest.Repo, "changed my mind", "", "agent-smith")
	ref := lifecycletest.Ref(n)
	if res, err := w.Claims.Claim(t.Context(), ref, lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	if err := w.Sim.RemoveLabel(lifecycletest.Repo, n, "agent-smith"); err != nil {
		t.Fatal(err)
	}
	rec := startCancellable(t, w, dir)
	assertCancelled(t, w, rec, n, lifecycle.Enqueued, lifecycle.CauseUntriggered)
	if lifecycletest.Exists(filepath.Join(dir, "runs")) {
		t.Fatal("the pipeline ran")
	}
	if reqs := w.Requests(t); len(reqs) != 0 {
		t.Fatalf("queue %+v, want empty", reqs)
	}

	// Triggered again: remove Failed, add the trigger.
	if err := w.Sim.RemoveLabel(lifecycletest.Repo, n, w.Labels.Label(lifecycle.Failed)); err != nil {
		t.Fatal(err)
	}
	if err := w.Sim.AddLabels(lifecycletest.Repo, n, "agent-smith"); err != nil {
		t.Fatal(err)
	}
	if res, err := w.Claims.Claim(t.Context(), ref, lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed || res.Request.Attempt != 1 {
		t.Fatalf("claim after re-trigger: %+v %v", res, err)
	}
	eventually.Wait(t, 10*time.Second, "the pipeline to start", func() bool { return lifecycletest.Exists(filepath.Join(dir, "started")) })
}

// An operator's cancel request left over from a finished run does not stop a
// fresh trigger's run: the claim clears it.
func TestFreshTriggerClearsLeftoverCancel(t *testing.T) {
	w := lifecycletest.New(t, 3)
	n := w.Sim.CreateIssue(lifecycletest.Repo, "again", "", "agent-smith")
	ref := lifecycletest.Ref(n)
	if err := runstate.RequestCancel(t.Context(), w.RDB, ref, lifecycle.CtlCause("old"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if res, err := w.Claims.Claim(t.Context(), ref, lifecycle.SourcePoll, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	if got, err := runstate.RequestedCancel(t.Context(), w.RDB, ref); err != nil || got != "" {
		t.Fatalf("cancel request after a fresh claim = %q, %v; want none", got, err)
	}
}

// A consumer that drops a duplicate request because another run holds the
// ticket names that run's holder in its Event.
func TestDroppedDuplicateNamesTheRunHolder(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	n := w.Sim.CreateIssue(lifecycletest.Repo, "contended", "", "agent-smith")
	ref := lifecycletest.Ref(n)
	if res, err := w.Claims.Claim(t.Context(), ref, lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	since := time.Now().Add(-time.Minute).Truncate(time.Millisecond).UTC()
	holder := fmt.Sprintf("replica-b|poll|%d|tok", since.UnixMilli())
	if err := w.RDB.Set(t.Context(), keys.Heartbeat(ref.Key()), holder, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	rec := startCancellable(t, w, dir)
	eventually.Wait(t, 10*time.Second, "the duplicate to be dropped", func() bool {
		for _, ev := range rec.Events() {
			if ev.Outcome == consumer.OutcomeRunHeld && ev.Ref == ref {
				if ev.Holder == nil || ev.Holder.Instance != "replica-b" || ev.Holder.Source != "poll" || !ev.Holder.Since.Equal(since) {
					t.Fatalf("holder %+v", ev.Holder)
				}
				return true
			}
		}
		return false
	})
}
