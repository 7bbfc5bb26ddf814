package housekeeping

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// delayedRetry makes issue n look like a ticket between two attempts:
// Enqueued on the tracker, its next request waiting in the delayed set.
func delayedRetry(t *testing.T, w *lifecycletest.World, n int, wait time.Duration) lifecycle.PipelineRequest {
	t.Helper()
	req := lifecycle.PipelineRequest{ID: "retry-" + lifecycletest.Ref(n).ID, Ref: lifecycletest.Ref(n), Source: lifecycle.SourceRetry,
		Attempt: 2, EnqueuedAt: time.Now().Add(wait), Priority: lifecycletest.HighPriority}
	if err := w.Queue.Delay(t.Context(), req.Encode(), wait); err != nil {
		t.Fatal(err)
	}
	return req
}

// A ticket whose request waits out its backoff is queued, not orphaned:
// neither the grace-free cycle after a Redis loss nor the re-check under the
// claim lock re-pushes it. Once the delayed set is gone too (Redis lost its
// data), the reconciler re-pushes the ticket like any other orphan.
func TestReconcilerCountsDelayedRequestsAsQueued(t *testing.T) {
	w := lifecycletest.New(t, 3)
	n := w.Sim.CreateIssue(lifecycletest.Repo, "between attempts", "", "agent-smith", lifecycletest.Label(lifecycle.Enqueued), "priority:high")
	delayedRetry(t, w, n, time.Hour)
	r := NewEnqueuedReconciler(w.RDB, w.Queue, w.Claims, EnqueuedReconcilerConfig{Grace: time.Hour})
	if err := r.slowKicked(t.Context()); err != nil {
		t.Fatal(err)
	}
	if reqs := w.Requests(t); len(reqs) != 0 {
		t.Fatalf("queue = %+v: a ticket whose retry is delayed was re-pushed", reqs)
	}
	// The slow path (under the claim lock) looks again too.
	if err := r.repush(t.Context(), lifecycletest.Ref(n)); err != nil {
		t.Fatal(err)
	}
	if reqs := w.Requests(t); len(reqs) != 0 {
		t.Fatalf("queue = %+v: re-push under the lock ignored the delayed set", reqs)
	}
	w.Redis.Flush()
	if err := r.slowKicked(t.Context()); err != nil {
		t.Fatal(err)
	}
	reqs := w.Requests(t)
	if len(reqs) != 1 || reqs[0].Ref != lifecycletest.Ref(n) || reqs[0].Source != lifecycle.SourceReconcile || reqs[0].Priority != lifecycletest.HighPriority {
		t.Fatalf("after the delayed set was lost: %+v, want one re-push at the ticket's priority", reqs)
	}
	if got, _ := w.RDB.LLen(t.Context(), keys.QueueLevel(lifecycletest.HighPriority)).Result(); got != 1 {
		t.Errorf("re-push went to the wrong level (high level holds %d)", got)
	}
}

func TestDelayedPromoterMovesDueRequestsOnly(t *testing.T) {
	w := lifecycletest.New(t, 3)
	due := delayedRetry(t, w, 1, -time.Second)
	delayedRetry(t, w, 2, time.Minute)
	p := NewDelayedPromoter(w.Queue, DelayedPromoterConfig{Batch: 1})
	if err := p.Cycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	reqs := w.Requests(t)
	if len(reqs) != 1 || reqs[0].ID != due.ID {
		t.Fatalf("queue = %+v, want only the due request", reqs)
	}
	if d := w.Delayed(t); len(d) != 1 || d[0].Ref != lifecycletest.Ref(2) {
		t.Fatalf("delayed = %+v, want the later one left", d)
	}
}

func TestDelayedPromoterIsFencedByTheLease(t *testing.T) {
	w := lifecycletest.New(t, 3)
	delayedRetry(t, w, 1, -time.Second)
	p := NewDelayedPromoter(w.Queue, DelayedPromoterConfig{Fence: func(context.Context) error { return errors.New("lease lost") }})
	if err := p.Cycle(t.Context()); err == nil {
		t.Error("a fenced-out promoter reported success")
	}
	if reqs := w.Requests(t); len(reqs) != 0 {
		t.Fatalf("queue = %+v: a leader whose lease was lost promoted a request", reqs)
	}
}
