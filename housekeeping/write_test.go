package housekeeping

import (
	"errors"
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
)

// The StaleJobDetector's writes ask the transition table first: without
// the row, a revert leaves the ticket in-progress, and giving up on a
// ticket whose attempts are used up leaves it pending with no comment.
func TestStaleJobDetectorWritesAreRefusedWithoutTheirTransitionRow(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to lifecycle.State
		want     lifecycle.State
	}{
		{"revert", lifecycle.InProgress, lifecycle.Pending, lifecycle.InProgress},
		{"give up", lifecycle.Pending, lifecycle.Failed, lifecycle.Pending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := lifecycletest.New(t, 2)
			n := w.Sim.CreateIssue(lifecycletest.Repo, "dead on its last attempt", "", "agent-smith", "agent-smith:in-progress")
			deadRun(t, w, n, "ghost", 2)
			lifecycletest.WithoutTransition(t, tc.from, tc.to, lifecycle.OwnerStaleJobDetector)
			err := NewStaleJobDetector(w.RDB, w.Claims, StaleJobDetectorConfig{}).FastCycle(t.Context())
			if !errors.Is(err, lifecycle.ErrIllegalTransition) {
				t.Errorf("fast cycle: %v, want refused as an illegal transition", err)
			}
			if s := w.State(t, n); s != tc.want {
				t.Errorf("state %s, want %s", s, tc.want)
			}
			if is, _ := w.Sim.Issue(lifecycletest.Repo, n); len(is.Comments) != 0 {
				t.Errorf("comments %+v, want none before a refused write", is.Comments)
			}
		})
	}
}
