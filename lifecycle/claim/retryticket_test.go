package claim_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// A failed ticket retried by a person runs again from attempt 1, even when
// a stale attempt count was left in Redis, and reaches Done; the retry is a
// Failed → Enqueued transition owned by the claim service.
func TestRetryRunsAFailedTicketAgainWithAFreshAttemptCount(t *testing.T) {
	w := lifecycletest.New(t, 1)
	dir := t.TempDir()
	w.Projects[lifecycletest.Project].Pipeline.Command = lifecycletest.CountingPipeline("1 0")
	rec := consumertest.RunWorld(t, w, dir, 1)
	n := w.ClaimIssue(t, "fails once")
	w.WaitOutcome(t, rec, n, lifecycle.Failed, "failed")

	ref := lifecycletest.Ref(n)
	// The Failed label is written before the run lets go of its heartbeat:
	// a retry in between is refused as "still finishing" (a flake CI met).
	eventually.Wait(t, 10*time.Second, "the failed run to let go of the ticket", func() bool {
		running, err := runstate.Running(t.Context(), w.RDB, ref)
		return err == nil && !running
	})
	// A count left behind (say by a reclaim that raced the failure) would
	// make attempt 1 stale to the consumer.
	if err := w.RDB.HSet(t.Context(), keys.Attempts(), ref.Key(), 4).Err(); err != nil {
		t.Fatal(err)
	}
	claimRec := &lifecycletest.Recorder{}
	claims := claim.NewService(w.RDB, w.Queue, w.Projects, claim.Config{Instance: "test", Labels: w.Labels,
		Logger: zaptest.NewLogger(t), Observer: claimRec})
	res, err := claims.Retry(t.Context(), ref, claim.SourceCommand, "alice")
	if err != nil || !res.Retried() || res.Request.Attempt != 1 || res.State != "enqueued" {
		t.Fatalf("retry = %+v, %v; want a request for attempt 1", res, err)
	}
	w.WaitOutcome(t, rec, n, lifecycle.Done, "succeeded")
	if got := lifecycletest.Runs(t, dir); !slices.Equal(got, []string{"1", "1"}) {
		t.Errorf("attempts run %q, want 1 then 1 again", got)
	}
	evs := claimRec.Kind(lifecycle.EventTransition)
	if len(evs) != 1 || evs[0].From != lifecycle.Failed || evs[0].To != lifecycle.Enqueued || evs[0].Owner != lifecycle.OwnerClaimService ||
		evs[0].Source != claim.SourceCommand || !strings.Contains(evs[0].Reason, "alice") || !evs[0].Retrigger {
		t.Errorf("transitions %+v, want one failed → enqueued by the claim service naming alice", evs)
	}
	if err := lifecycle.Check(lifecycle.Failed, lifecycle.Enqueued, lifecycle.OwnerClaimService); err != nil {
		t.Error(err)
	}
}

// Anything but an open Failed ticket with its trigger label is left as it
// is, with a reason, and nothing is queued.
func TestRetryLeavesOtherTicketsAlone(t *testing.T) {
	w := lifecycletest.New(t, 3)
	ctx := t.Context()
	failed := w.Labels.Label(lifecycle.Failed)
	cases := []struct {
		name   string
		labels []string
		closed bool
		hb     bool
		want   string
	}{
		{name: "pending", labels: []string{"agent-smith"}, want: "state is pending"},
		{name: "enqueued", labels: []string{"agent-smith", w.Labels.Label(lifecycle.Enqueued)}, want: "state is enqueued"},
		{name: "in progress", labels: []string{"agent-smith", w.Labels.Label(lifecycle.InProgress)}, want: "state is in-progress"},
		{name: "done", labels: []string{"agent-smith", w.Labels.Label(lifecycle.Done)}, want: "already done"},
		{name: "closed", labels: []string{"agent-smith", failed}, closed: true, want: "closed"},
		{name: "untriggered", labels: []string{failed}, want: "no trigger label"},
		{name: "finishing", labels: []string{"agent-smith", failed}, hb: true, want: "still finishing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := w.Sim.CreateIssue(lifecycletest.Repo, tc.name, "", tc.labels...)
			ref := lifecycletest.Ref(n)
			if tc.closed {
				if err := w.Sim.SetOpen(lifecycletest.Repo, n, false); err != nil {
					t.Fatal(err)
				}
			}
			if tc.hb {
				if err := w.RDB.Set(ctx, keys.Heartbeat(ref.Key()), "run", 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			res, err := w.Claims.Retry(ctx, ref, lifecycle.SourceOperator, "")
			if err != nil || res.Retried() || !strings.Contains(res.Reason, tc.want) {
				t.Errorf("retry = %+v, %v; want refused with %q", res, err, tc.want)
			}
			is, _ := w.Sim.Issue(lifecycletest.Repo, n)
			if !slices.Equal(is.Labels, tc.labels) {
				t.Errorf("labels %q, want %q unchanged", is.Labels, tc.labels)
			}
		})
	}
	if l, _ := w.Queue.Len(ctx); l != 0 {
		t.Errorf("queue length %d, want 0", l)
	}
}

// Two retries at once queue one request: the claim lock and the state
// read under it let only the first through.
func TestConcurrentRetriesQueueOnce(t *testing.T) {
	w := lifecycletest.New(t, 3)
	n := w.Sim.CreateIssue(lifecycletest.Repo, "twice", "", "agent-smith", w.Labels.Label(lifecycle.Failed))
	results := make(chan claim.RetryResult, 10)
	for range 10 {
		go func() {
			res, err := w.Claims.Retry(t.Context(), lifecycletest.Ref(n), claim.SourceCommand, "bob")
			if err != nil {
				t.Error(err)
			}
			results <- res
		}()
	}
	retried := 0
	for range 10 {
		if (<-results).Retried() {
			retried++
		}
	}
	if retried != 1 {
		t.Errorf("%d retries queued, want 1", retried)
	}
	if l, _ := w.Queue.Len(t.Context()); l != 1 {
		t.Errorf("queue length %d, want 1", l)
	}
	if s := w.State(t, n); s != lifecycle.Enqueued {
		t.Errorf("state %s, want enqueued", s)
	}
}
