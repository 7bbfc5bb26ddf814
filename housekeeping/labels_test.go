package housekeeping

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
)

// TestLabelRepairerRemovesLabelsOfInterruptedWrites: tickets left with two
// lifecycle labels keep the one StateOf picks and every other label; a
// ticket a run or a claim holds, or one with a single lifecycle label, is
// not written; a lapsed fence writes nothing.
func TestLabelRepairerRemovesLabelsOfInterruptedWrites(t *testing.T) {
	w := lifecycletest.New(t, 3)
	repo := lifecycletest.Repo
	started := w.Sim.CreateIssue(repo, "start cut off", "", "keep", "agent-smith", lifecycletest.Label(lifecycle.Enqueued), lifecycletest.Label(lifecycle.InProgress))
	failed := w.Sim.CreateIssue(repo, "give-up cut off", "", lifecycletest.Label(lifecycle.Pending), "zeta", lifecycletest.Label(lifecycle.Failed))
	running := w.Sim.CreateIssue(repo, "run holds it", "", lifecycletest.Label(lifecycle.Enqueued), lifecycletest.Label(lifecycle.InProgress))
	claiming := w.Sim.CreateIssue(repo, "claim holds it", "", lifecycletest.Label(lifecycle.Pending), lifecycletest.Label(lifecycle.Enqueued))
	single := w.Sim.CreateIssue(repo, "fine", "", "agent-smith", lifecycletest.Label(lifecycle.Enqueued))
	deadRun(t, w, running, "live-replica", 1)
	ref := lifecycletest.Ref(claiming)
	if ok, err := redislock.Acquire(t.Context(), w.RDB, keys.ClaimLock(ref.Platform, ref.ID), "someone", time.Minute); err != nil || !ok {
		t.Fatalf("hold claim lock: %v %v", ok, err)
	}

	lapsed := errors.New("lease lost")
	fenced := NewLabelRepairer(w.RDB, w.Claims, LabelRepairerConfig{Fence: func(context.Context) error { return lapsed }})
	before := len(w.Sim.Writes())
	if err := fenced.Cycle(t.Context()); !errors.Is(err, lapsed) {
		t.Fatalf("fenced cycle err = %v, want the fence's", err)
	}
	if n := len(w.Sim.Writes()) - before; n != 0 {
		t.Fatalf("a fenced repairer wrote %d times", n)
	}

	if err := NewLabelRepairer(w.RDB, w.Claims, LabelRepairerConfig{}).Cycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		n    int
		want []string
	}{
		{started, []string{"keep", "agent-smith", lifecycletest.Label(lifecycle.InProgress)}},
		{failed, []string{"zeta", lifecycletest.Label(lifecycle.Failed)}},
		{running, []string{lifecycletest.Label(lifecycle.Enqueued), lifecycletest.Label(lifecycle.InProgress)}},
		{claiming, []string{lifecycletest.Label(lifecycle.Pending), lifecycletest.Label(lifecycle.Enqueued)}},
		{single, []string{"agent-smith", lifecycletest.Label(lifecycle.Enqueued)}},
	} {
		is, _ := w.Sim.Issue(repo, c.n)
		if !slices.Equal(is.Labels, c.want) {
			t.Errorf("issue %d %q: labels %q, want %q", c.n, is.Title, is.Labels, c.want)
		}
	}
	if n := len(w.Sim.Writes()) - before; n != 2 {
		t.Errorf("repairer made %d label writes, want 2 (one removal per extra label)", n)
	}
}

// A write InProgress → AwaitingApproval or AwaitingApproval → Failed cut
// off leaves two state labels: the repair keeps the further one, and on a
// parked ticket it keeps a person's decision label for the ApprovalGate.
func TestLabelRepairerKeepsParkedTicketsAndTheirDecisions(t *testing.T) {
	w := lifecycletest.New(t, 3)
	repo := lifecycletest.Repo
	awaiting := lifecycletest.Label(lifecycle.AwaitingApproval)
	approved := lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}.Approved()
	parked := w.Sim.CreateIssue(repo, "park cut off", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress), awaiting, approved)
	failing := w.Sim.CreateIssue(repo, "fail cut off", "", awaiting, lifecycletest.Label(lifecycle.Failed))
	fine := w.Sim.CreateIssue(repo, "parked, approved", "", "agent-smith", awaiting, approved)
	before := len(w.Sim.Writes())
	if err := NewLabelRepairer(w.RDB, w.Claims, LabelRepairerConfig{}).Cycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		n    int
		want []string
	}{
		{parked, []string{"agent-smith", awaiting, approved}},
		{failing, []string{lifecycletest.Label(lifecycle.Failed)}},
		{fine, []string{"agent-smith", awaiting, approved}},
	} {
		is, _ := w.Sim.Issue(repo, c.n)
		if !slices.Equal(is.Labels, c.want) {
			t.Errorf("issue %d %q: labels %q, want %q", c.n, is.Title, is.Labels, c.want)
		}
	}
	if n := len(w.Sim.Writes()) - before; n != 2 {
		t.Errorf("repairer made %d label writes, want 2", n)
	}
}
