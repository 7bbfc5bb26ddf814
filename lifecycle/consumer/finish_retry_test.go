package consumer_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
)

// A retry's backoff is counted on Redis's clock: a replica whose wall clock
// is minutes ahead of the promoter's does not hold its retry back by the
// difference.
func TestRetryOfAReplicaWithAClockAheadIsNotHeldBack(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	p := w.Projects[lifecycletest.Project]
	lifecycletest.RetryOn(p, 75)
	p.Pipeline.Command = lifecycletest.CountingPipeline("75 0")
	ahead := func() time.Time { return time.Now().Add(10 * time.Minute) }
	rec := consumertest.RunWorldClock(t, w, dir, 1, ahead)
	n := w.ClaimIssue(t, "flaky on a fast clock")
	w.WaitOutcome(t, rec, n, lifecycle.Done, "succeeded")
	if got := lifecycletest.Runs(t, dir); !slices.Equal(got, []string{"1", "2"}) {
		t.Errorf("attempts run %q, want 1 then 2", got)
	}
}

func TestRetryableFailureWaitsOutItsBackoffThenRunsTheNextAttempt(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	p := w.Projects[lifecycletest.Project]
	lifecycletest.RetryOn(p, 75)
	p.Pipeline.Command = lifecycletest.CountingPipeline("75 0")
	rec := consumertest.RunWorld(t, w, dir, 1)
	n := w.ClaimIssue(t, "flaky", "priority:high")
	w.WaitOutcome(t, rec, n, lifecycle.Done, "succeeded")

	if got := lifecycletest.Runs(t, dir); !slices.Equal(got, []string{"1", "2"}) {
		t.Errorf("attempts run %q, want 1 then 2", got)
	}
	if got := rec.Outcomes(); !slices.Equal(got, []string{"retrying", "succeeded"}) {
		t.Errorf("outcomes %q", got)
	}
	ev, _ := rec.Find("retrying")
	if ev.To != lifecycle.Enqueued || ev.Attempt != 1 || !strings.Contains(ev.Reason, "exit status 75; attempt 2 in 300ms") {
		t.Errorf("retrying event %+v", ev)
	}
	// Backoff 400ms; jitter 0.5 takes up to half of it, r = 0.5 a quarter.
	cs := w.Comments(t, n)
	if len(cs) != 1 || !strings.Contains(cs[0], "pipeline failed (attempt 1 of 3), retrying in 300ms") {
		t.Errorf("comments %q", cs)
	}
	if err := lifecycle.Check(lifecycle.InProgress, lifecycle.Enqueued, lifecycle.OwnerExecutor); err != nil {
		t.Error(err)
	}
}

// Between attempts the ticket is Enqueued, its run released, and the next
// attempt's request waits in the delayed set with the ticket's priority,
// due after the backoff.
func TestRetryWaitsInTheDelayedSet(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	p := w.Projects[lifecycletest.Project]
	lifecycletest.RetryOn(p, 75)
	p.Pipeline.Retry.Backoff = lifecycle.Backoff{Initial: time.Hour, Max: 2 * time.Hour, Multiplier: 2, Jitter: 0.5}
	p.Pipeline.Command = lifecycletest.CountingPipeline("75")
	rec := consumertest.RunWorld(t, w, dir, 1)
	before := time.Now()
	n := w.ClaimIssue(t, "flaky", "priority:high")
	w.WaitOutcome(t, rec, n, lifecycle.Enqueued, "retrying")

	// The "retrying" event is emitted on the label write; the request joins
	// the delayed set right after it.
	var entries []queue.DelayedEntry
	eventually.Wait(t, 5*time.Second, "one request in the delayed set", func() bool {
		var err error
		entries, err = w.Queue.DelayedEntries(t.Context())
		return err == nil && len(entries) == 1
	})
	req, err := lifecycle.DecodeRequest(entries[0].Payload)
	if err != nil || req.Attempt != 2 || req.Priority != lifecycletest.HighPriority || req.Source != lifecycle.SourceRetry {
		t.Errorf("delayed request %+v, %v; want attempt 2 at high priority", req, err)
	}
	// Backoff 1h; jitter 0.5 at r = 0.5 takes a quarter: due in 45 min.
	if due := entries[0].Due; due.Before(before.Add(45*time.Minute)) || due.After(time.Now().Add(45*time.Minute)) {
		t.Errorf("due %s, want 45 min after the failure", due)
	}
	if len(w.Requests(t)) != 0 {
		t.Error("the retry is on the queue before its backoff ended")
	}
	ref := lifecycletest.Ref(n)
	if hb, _ := w.RDB.Exists(t.Context(), keys.Heartbeat(ref.Key())).Result(); hb != 0 {
		t.Error("heartbeat kept between attempts")
	}
	if last, _ := runstate.LastAttempt(t.Context(), w.RDB, ref); last != 2 {
		t.Errorf("last attempt %d, want 2 recorded as due for the retry", last)
	}
}

func TestRetriesRunOutThenTheTicketFails(t *testing.T) {
	w := lifecycletest.New(t, 2)
	dir := t.TempDir()
	p := w.Projects[lifecycletest.Project]
	lifecycletest.RetryOn(p, 75)
	p.Pipeline.Command = lifecycletest.CountingPipeline("75 75 75")
	rec := consumertest.RunWorld(t, w, dir, 1)
	n := w.ClaimIssue(t, "always flaky")
	w.WaitOutcome(t, rec, n, lifecycle.Failed, "failed")
	if got := lifecycletest.Runs(t, dir); !slices.Equal(got, []string{"1", "2"}) {
		t.Errorf("attempts run %q, want 1 and 2 of max 2", got)
	}
	if got := rec.Outcomes(); !slices.Equal(got, []string{"retrying", "failed"}) {
		t.Errorf("outcomes %q", got)
	}
	cs := w.Comments(t, n)
	if len(cs) != 2 || !strings.Contains(cs[0], "(attempt 1 of 2), retrying in") || !strings.Contains(cs[1], "; attempts used up (2 of 2)") {
		t.Errorf("comments %q", cs)
	}
	if d := w.Delayed(t); len(d) != 0 {
		t.Errorf("delayed set %+v after the last attempt", d)
	}
}

func TestNonRetryableFailureFailsAtOnce(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	p := w.Projects[lifecycletest.Project]
	lifecycletest.RetryOn(p, 75)
	p.Pipeline.Command = lifecycletest.CountingPipeline("1")
	rec := consumertest.RunWorld(t, w, dir, 1)
	n := w.ClaimIssue(t, "broken")
	w.WaitOutcome(t, rec, n, lifecycle.Failed, "failed")
	if got := lifecycletest.Runs(t, dir); len(got) != 1 {
		t.Errorf("ran %d times, want once", len(got))
	}
	if cs := w.Comments(t, n); len(cs) != 1 || !strings.Contains(cs[0], "pipeline failed; no retry configured (attempt 1)\n") {
		t.Errorf("comments %q", cs)
	}
	if d := w.Delayed(t); len(d) != 0 {
		t.Errorf("delayed set %+v for a non-retryable failure", d)
	}
}

func TestEscalationFailsLabelsAndMentions(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	p := w.Projects[lifecycletest.Project]
	lifecycletest.RetryOn(p, 75)
	p.Pipeline.Escalate = lifecycle.EscalatePolicy{ExitCodes: []int{42}, Label: "needs-human", Mention: []string{"@alice", "@bob"}}
	p.Pipeline.Command = lifecycletest.CountingPipeline("42")
	rec := consumertest.RunWorld(t, w, dir, 1)
	n := w.ClaimIssue(t, "needs a person", "bug")
	w.WaitOutcome(t, rec, n, lifecycle.Failed, "escalated")
	is, _ := w.Sim.Issue(lifecycletest.Repo, n)
	for _, l := range []string{"agent-smith", "bug", "needs-human", lifecycletest.Label(lifecycle.Failed)} {
		if !slices.Contains(is.Labels, l) {
			t.Errorf("labels %q lack %q", is.Labels, l)
		}
	}
	if cs := w.Comments(t, n); len(cs) != 1 || !strings.Contains(cs[0], "failed on attempt 1 and needs a person: @alice @bob") {
		t.Errorf("comments %q", cs)
	}
	if got := rec.Outcomes(); !slices.Equal(got, []string{"escalated"}) {
		t.Errorf("outcomes %q", got)
	}
	if got := lifecycletest.Runs(t, dir); len(got) != 1 {
		t.Errorf("ran %d times, want once", len(got))
	}
}

// pipeline.timeout stops a run; with on_timeout the next attempt runs,
// without it the ticket fails with the timeout in its comment.
func TestTimeoutIsHonouredAndRetriedOnlyWhenAsked(t *testing.T) {
	for _, onTimeout := range []bool{true, false} {
		t.Run(map[bool]string{true: "on_timeout", false: "no_retry"}[onTimeout], func(t *testing.T) {
			w := lifecycletest.New(t, 3)
			dir := t.TempDir()
			p := w.Projects[lifecycletest.Project]
			lifecycletest.RetryOn(p, 75)
			p.Pipeline.Retry.OnTimeout = onTimeout
			p.Pipeline.Timeout = 300 * time.Millisecond
			// The first attempt hangs; later ones succeed.
			p.Pipeline.Command = []string{"sh", "-c", `echo "$AGENTSMITH_ATTEMPT" >> "$D/runs"; [ "$AGENTSMITH_ATTEMPT" = 1 ] && exec sleep 60; exit 0`}
			rec := consumertest.RunWorld(t, w, dir, 1)
			n := w.ClaimIssue(t, "slow")
			if onTimeout {
				w.WaitOutcome(t, rec, n, lifecycle.Done, "succeeded")
				if got := rec.Outcomes(); !slices.Equal(got, []string{"retrying", "succeeded"}) {
					t.Errorf("outcomes %q", got)
				}
				return
			}
			w.WaitOutcome(t, rec, n, lifecycle.Failed, "failed")
			if cs := w.Comments(t, n); len(cs) != 1 || !strings.Contains(cs[0], "after timeout 300ms") {
				t.Errorf("comments %q", cs)
			}
			if got := lifecycletest.Runs(t, dir); len(got) != 1 {
				t.Errorf("ran %d times, want once", len(got))
			}
		})
	}
}

// The persist command runs in the ticket's work dir before the retry; the
// next attempt finds what it saved there.
func TestPersistCommandSavesWorkForTheNextAttempt(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	p := w.Projects[lifecycletest.Project]
	lifecycletest.RetryOn(p, 75)
	p.Pipeline.PersistCommand = []string{"sh", "-c", `echo "$AGENTSMITH_OUTCOME after attempt $AGENTSMITH_ATTEMPT" > persisted`}
	p.Pipeline.PersistTimeout = 5 * time.Second
	// Attempt 1 fails; attempt 2 succeeds only if it sees attempt 1's file.
	p.Pipeline.Command = []string{"sh", "-c", `echo "$AGENTSMITH_ATTEMPT" >> "$D/runs"; [ "$AGENTSMITH_ATTEMPT" = 1 ] && exit 75; cp persisted "$D/seen"`}
	rec := consumertest.RunWorld(t, w, dir, 1)
	n := w.ClaimIssue(t, "persist")
	w.WaitOutcome(t, rec, n, lifecycle.Done, "succeeded")
	b, err := os.ReadFile(filepath.Join(dir, "seen"))
	if err != nil || string(b) != "retrying after attempt 1\n" {
		t.Errorf("attempt 2 saw %q, %v; want attempt 1's persisted file", b, err)
	}
	if cs := w.Comments(t, n); len(cs) != 1 || !strings.Contains(cs[0], "- persist command: succeeded") {
		t.Errorf("comments %q", cs)
	}
}

// A failing (or hanging) persist command is reported but never blocks the
// transition.
func TestFailingPersistCommandDoesNotBlockTheTransition(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	p := w.Projects[lifecycletest.Project]
	p.Pipeline.PersistCommand = []string{"sh", "-c", "sleep 60"}
	p.Pipeline.PersistTimeout = 200 * time.Millisecond
	p.Pipeline.Command = lifecycletest.CountingPipeline("1")
	rec := consumertest.RunWorld(t, w, dir, 1)
	n := w.ClaimIssue(t, "persist fails")
	w.WaitOutcome(t, rec, n, lifecycle.Failed, "failed")
	if cs := w.Comments(t, n); len(cs) != 1 || !strings.Contains(cs[0], "- persist command: **failed** (killed by signal terminated after timeout 200ms)") {
		t.Errorf("comments %q", cs)
	}
}
