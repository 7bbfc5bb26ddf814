package lifecycle_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// Every claim write asks the transition table first: with its row taken
// out, the write is refused and the ticket, the comments and the queue stay
// as they were.
func TestClaimWritesAreRefusedWithoutTheirTransitionRow(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to lifecycle.State
		attempts int // recorded in Redis before the claim
	}{
		{"claim", lifecycle.Pending, lifecycle.Enqueued, 0},
		{"attempts used up", lifecycle.Pending, lifecycle.Failed, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			ctx := context.Background()
			n := w.Sim.CreateIssue("acme/app", "refused", "", "agent-smith")
			if tc.attempts > 0 {
				if err := w.RDB.HSet(ctx, keys.Attempts(), ref(n).Key(), tc.attempts).Err(); err != nil {
					t.Fatal(err)
				}
			}
			lifecycletest.WithoutTransition(t, tc.from, tc.to, lifecycle.OwnerClaimService)
			writes := len(w.Sim.Writes())
			res, err := w.Claims.Claim(ctx, ref(n), lifecycle.SourceWebhook, 1)
			if !errors.Is(err, lifecycle.ErrIllegalTransition) {
				t.Errorf("claim = %+v, %v; want refused as an illegal transition", res, err)
			}
			if s := w.State(t, n); s != lifecycle.Pending {
				t.Errorf("state %s, want pending", s)
			}
			if got := len(w.Sim.Writes()); got != writes {
				t.Errorf("%d writes to the tracker, want none", got-writes)
			}
			if is, _ := w.Sim.Issue("acme/app", n); len(is.Comments) != 0 {
				t.Errorf("comments %+v, want none before a refused write", is.Comments)
			}
			if l, _ := w.Queue.Len(ctx); l != 0 {
				t.Errorf("queue length %d, want 0", l)
			}
		})
	}
}
