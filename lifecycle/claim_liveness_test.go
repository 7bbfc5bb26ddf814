package lifecycle_test

import (
	"sync/atomic"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
)

// liveness is a presence a test turns off.
type liveness struct{ ok atomic.Bool }

func (l *liveness) Valid() bool           { return l.ok.Load() }
func (l *liveness) Lost() <-chan struct{} { return nil }

// A replica whose liveness lapsed (cut from Redis after taking the claim
// lock, or frozen) writes no label for a claim: its lock may have expired
// and been taken by another replica since. With liveness back, the claim
// is made.
func TestClaimWritesNothingWithoutLiveness(t *testing.T) {
	w := lifecycletest.New(t, 3)
	live := &liveness{}
	claims := lifecycle.NewClaimService(w.RDB, w.Queue, w.Projects, lifecycle.ClaimConfig{Instance: "test", Labels: w.Labels,
		Logger: zaptest.NewLogger(t), Liveness: live})
	n := w.Sim.CreateIssue(lifecycletest.Repo, "triggered", "", "agent-smith")
	writes := len(w.Sim.Writes())
	if res, err := claims.Claim(t.Context(), lifecycletest.Ref(n), lifecycle.SourceWebhook, 1); err == nil {
		t.Fatalf("claim without liveness: %+v, want an error", res)
	}
	if got := w.Sim.Writes()[writes:]; len(got) != 0 {
		t.Errorf("writes without liveness: %+v", got)
	}
	if s := w.State(t, n); s != lifecycle.Pending {
		t.Errorf("state %v, want pending", s)
	}
	if reqs := w.Requests(t); len(reqs) != 0 {
		t.Errorf("queued %d requests, want none", len(reqs))
	}
	live.ok.Store(true)
	// The abandoned claim released its lock (Redis answers here).
	if res, err := claims.Claim(t.Context(), lifecycletest.Ref(n), lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim with liveness: %+v %v", res, err)
	}
}
