package claim_test

import (
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
)

// A claim that got its lock but reaches its write past the lock's trust
// window (its replica cut from Redis, frozen, or held up by a slow tracker)
// writes no label: the lock may have expired and been taken by another
// replica. Within the window the same claim is made.
func TestClaimWritesNothingPastItsLocksTrustWindow(t *testing.T) {
	w := lifecycletest.New(t, 3)
	base := time.Now()
	var late atomic.Bool
	var calls atomic.Int32
	clock := func() time.Time {
		// The first reading stamps the lock; every later one is, when
		// late, an hour on.
		if calls.Add(1) > 1 && late.Load() {
			return base.Add(time.Hour)
		}
		return base
	}
	claims := claim.NewService(w.RDB, w.Queue, w.Projects, claim.Config{Instance: "test", Labels: w.Labels,
		LockTTL: 5 * time.Second, Clock: clock, Logger: zaptest.NewLogger(t)})
	n := w.Sim.CreateIssue(lifecycletest.Repo, "triggered", "", "agent-smith")
	writes := len(w.Sim.Writes())
	late.Store(true)
	if res, err := claims.Claim(t.Context(), lifecycletest.Ref(n), lifecycle.SourceWebhook, 1); err == nil {
		t.Fatalf("claim past its lock's window: %+v, want an error", res)
	}
	if got := w.Sim.Writes()[writes:]; len(got) != 0 {
		t.Errorf("writes past the lock's window: %+v", got)
	}
	if s := w.State(t, n); s != lifecycle.Pending {
		t.Errorf("state %v, want pending", s)
	}
	if reqs := w.Requests(t); len(reqs) != 0 {
		t.Errorf("queued %d requests, want none", len(reqs))
	}
	late.Store(false)
	calls.Store(0)
	if res, err := claims.Claim(t.Context(), lifecycletest.Ref(n), lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim within the window: %+v %v", res, err)
	}
}
