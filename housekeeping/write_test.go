package housekeeping

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/platforms"
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
			n := w.Sim.CreateIssue(lifecycletest.Repo, "dead on its last attempt", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
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

// commentFails is a tracker whose comments fail: the tracker refuses them,
// while reads and label writes go through.
type commentFails struct{ platforms.Tracker }

func (commentFails) Comment(context.Context, platforms.Ref, string) error {
	return errors.New("comment refused")
}

// Giving up needs its comment first: when the comment fails the ticket stays
// pending with its attempt count, and the next claim (here the
// TriggerSweeper's) gives up with the comment once the tracker takes it.
func TestGiveUpWithoutItsCommentWritesNothingAndTheNextClaimGivesUp(t *testing.T) {
	w := lifecycletest.New(t, 2)
	n := w.Sim.CreateIssue(lifecycletest.Repo, "dead on its last attempt", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
	deadRun(t, w, n, "ghost", 2)
	p := w.Projects[lifecycletest.Project]
	real := p.Tracker
	p.Tracker = commentFails{real}
	if err := NewStaleJobDetector(w.RDB, w.Claims, StaleJobDetectorConfig{}).FastCycle(t.Context()); err == nil {
		t.Error("fast cycle succeeded although the give-up comment failed")
	}
	if s := w.State(t, n); s != lifecycle.Pending {
		t.Fatalf("state %s, want pending (reverted, not failed without a comment)", s)
	}
	if last, err := runstate.LastAttempt(t.Context(), w.RDB, lifecycletest.Ref(n)); err != nil || last != 2 {
		t.Fatalf("attempt count %d (%v), want 2 kept", last, err)
	}
	p.Tracker = real
	if err := NewTriggerSweeper(w.Claims, TriggerSweeperConfig{}).Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s := w.State(t, n); s != lifecycle.Failed {
		t.Errorf("state %s after the sweep, want failed", s)
	}
	is, _ := w.Sim.Issue(lifecycletest.Repo, n)
	if len(is.Comments) != 1 || !strings.Contains(is.Comments[0].Body, "2 of 2 attempts used") || !strings.Contains(is.Comments[0].Body, "start over") {
		t.Errorf("comments = %+v, want one saying the attempts ran out and how to start over", is.Comments)
	}
	if len(w.Requests(t)) != 0 {
		t.Error("an exhausted ticket must not be queued")
	}
}
