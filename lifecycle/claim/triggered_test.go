package claim_test

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/poller"
)

func TestPollOnceClaimsTriggeredPendingTicketsOnly(t *testing.T) {
	w := newWorld(t)
	missed := w.Sim.CreateIssue("acme/app", "triggered", "", "agent-smith")
	done := w.Sim.CreateIssue("acme/app", "finished", "", "agent-smith", lifecycletest.Label(lifecycle.Done))
	untriggered := w.Sim.CreateIssue("acme/app", "no trigger", "")
	p := poller.NewPoller(w.Claims, zaptest.NewLogger(t))
	n, err := p.PollOnce(t.Context(), lifecycletest.Project)
	if err != nil || n != 1 {
		t.Fatalf("poll = %d, %v; want one claimed", n, err)
	}
	for _, c := range []struct {
		n    int
		want lifecycle.State
	}{{missed, lifecycle.Enqueued}, {done, lifecycle.Done}, {untriggered, lifecycle.Pending}} {
		if s := w.State(t, c.n); s != c.want {
			t.Errorf("issue %d is %s, want %s", c.n, s, c.want)
		}
	}
	reqs := w.Requests(t)
	if len(reqs) != 1 || reqs[0].Source != lifecycle.SourcePoll || reqs[0].Ref != ref(missed) || reqs[0].Attempt != 1 {
		t.Errorf("queue = %+v, want one poll request for issue %d, attempt 1", reqs, missed)
	}
	if _, err := p.PollOnce(t.Context(), "nope"); err == nil {
		t.Error("polling an unknown project succeeded")
	}
}

// A fence that fails (the lease is lost) stops the pass before any claim.
func TestClaimTriggeredStopsAtAFailingFence(t *testing.T) {
	w := newWorld(t)
	n := w.Sim.CreateIssue("acme/app", "triggered", "", "agent-smith")
	lost := errors.New("lease lost")
	writes := len(w.Sim.Writes())
	claimed, err := w.Claims.ClaimTriggered(t.Context(), lifecycletest.Project, lifecycle.SourceSweep,
		func(context.Context) error { return lost })
	if !errors.Is(err, lost) || len(claimed) != 0 {
		t.Fatalf("claim triggered = %+v, %v; want nothing claimed and the fence's error", claimed, err)
	}
	if got := len(w.Sim.Writes()); got != writes || w.State(t, n) != lifecycle.Pending {
		t.Errorf("%d writes, state %s: want none, pending", got-writes, w.State(t, n))
	}
	if len(w.Requests(t)) != 0 {
		t.Error("a fenced-out pass queued a request")
	}
}
