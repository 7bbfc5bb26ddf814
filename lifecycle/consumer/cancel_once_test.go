package consumer_test

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// A cancel request honoured twice (its Failed write did not land, so the
// request came back, as EnqueuedReconciler re-pushes it) tells the ticket
// once: the second consumer only finishes the move to Failed.
func TestCancelHonouredTwiceCommentsOnce(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	p := w.Projects[lifecycletest.Project]
	n := w.Sim.CreateIssue(lifecycletest.Repo, "cancelled twice", "", p.TriggerLabel)
	ref := lifecycletest.Ref(n)
	if res, err := w.Claims.Claim(t.Context(), ref, lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	reqs := w.Requests(t)
	if len(reqs) != 1 {
		t.Fatalf("queue %+v, want the claim's request", reqs)
	}
	if err := w.Sim.RemoveLabel(lifecycletest.Repo, n, p.TriggerLabel); err != nil {
		t.Fatal(err)
	}
	// The cancellation's move to Failed is refused: the request is
	// handled, the ticket stays Enqueued and the cancel request is kept.
	w.Sim.RefuseLabelWrites(lifecycletest.Repo, n, true)
	startCancellable(t, w, dir)
	cancelComments := func() int {
		is, _ := w.Sim.Issue(lifecycletest.Repo, n)
		c := 0
		for _, cm := range is.Comments {
			if strings.Contains(cm.Body, "cancelled ("+lifecycle.CauseUntriggered+")") {
				c++
			}
		}
		return c
	}
	eventually.Wait(t, 10*time.Second, "the first cancellation to end", func() bool {
		busy, _ := w.RDB.Exists(t.Context(), keys.Heartbeat(ref.Key())).Result()
		return cancelComments() == 1 && busy == 0 && len(w.Requests(t)) == 0
	})
	if s := w.State(t, n); s != lifecycle.Enqueued {
		t.Fatalf("state %s after the refused move, want enqueued", s)
	}

	// The tracker takes writes again; the request comes back.
	w.Sim.RefuseLabelWrites(lifecycletest.Repo, n, false)
	lifecycle.NewRefusals(w.RDB, lifecycle.RefusalsConfig{Logger: zap.NewNop()}).EndBackoff(t.Context(), ref)
	if err := w.Queue.Push(t.Context(), reqs[0].Encode()); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 10*time.Second, "the ticket to fail", func() bool { return w.State(t, n) == lifecycle.Failed })
	if c := cancelComments(); c != 1 {
		t.Fatalf("%d cancellation comments, want 1", c)
	}
}
