package housekeeping

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/gate"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// TestGateKeeperFailsParkedPastDeadline: a cycle fails the parked ticket
// whose gate's timeout passed, leaves the one within it and the one whose
// gate has none, and finishes a decision a crash left recorded; a lapsed
// fence writes nothing.
func TestGateKeeperFailsParkedPastDeadline(t *testing.T) {
	w := lifecycletest.New(t, 3)
	p := w.Projects[lifecycletest.Project]
	p.Stages = []lifecycle.Stage{{Name: "plan"},
		{Name: "review", Gate: &lifecycle.Gate{Approval: &lifecycle.Approval{Approvers: lifecycle.TriggerAllow{Users: []string{"dana"}},
			MaxRejections: 2, Timeout: time.Hour, OnTimeout: lifecycle.OnTimeoutFail}}},
		{Name: "ship", Gate: &lifecycle.Gate{Approval: &lifecycle.Approval{Approvers: lifecycle.TriggerAllow{Users: []string{"dana"}},
			MaxRejections: 2}}}}
	sl := p.Labels(w.Labels)
	park := func(stage string, at time.Time) int {
		n := w.Sim.CreateIssue(lifecycletest.Repo, "parked at "+stage, "", "agent-smith", sl.Label(lifecycle.AwaitingApproval), sl.Stage(stage))
		if err := w.RDB.Set(t.Context(), keys.GateParked(lifecycletest.Ref(n).Key()), at.Format(time.RFC3339Nano), keys.GateTTL).Err(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	late, fresh, noDeadline, decided := park("review", now.Add(-2*time.Hour)), park("review", now.Add(-time.Minute)), park("ship", now.Add(-1000*time.Hour)), park("ship", now)
	if err := w.RDB.Set(t.Context(), keys.GateDecision(lifecycletest.Ref(decided).Key()), `{"kind":"approve","actor":"dana","stage":"ship"}`, keys.GateTTL).Err(); err != nil {
		t.Fatal(err)
	}
	g := gate.New(w.RDB, w.Claims, w.Queue, gate.Config{Instance: "test", Clock: func() time.Time { return now }})

	lapsed := errors.New("lease lost")
	before := len(w.Sim.Writes())
	fenced := NewGateKeeper(w.Claims, g, GateKeeperConfig{Fence: func(context.Context) error { return lapsed }})
	if err := fenced.Cycle(t.Context()); !errors.Is(err, lapsed) {
		t.Fatalf("fenced cycle err = %v, want the fence's", err)
	}
	if n := len(w.Sim.Writes()) - before; n != 0 {
		t.Fatalf("a fenced keeper wrote %d times", n)
	}

	if err := NewGateKeeper(w.Claims, g, GateKeeperConfig{}).Cycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]lifecycle.State{late: lifecycle.Failed, fresh: lifecycle.AwaitingApproval,
		noDeadline: lifecycle.AwaitingApproval, decided: lifecycle.Enqueued} {
		if s := w.State(t, n); s != want {
			t.Errorf("issue %d: state %s, want %s", n, s, want)
		}
	}
}

// TestGateKeeperCancelsParkedClosedOrUntriggered: a parked ticket that
// lost its trigger label (listed) and one closed (missing from the open
// listing, found through the parked index) leave the gate as an Enqueued
// ticket would: Failed, outcome cancelled, one comment with the cause,
// their gate records gone. An index entry of a ticket no longer parked
// is dropped; a parked ticket with its trigger label stays.
func TestGateKeeperCancelsParkedClosedOrUntriggered(t *testing.T) {
	w := lifecycletest.New(t, 3)
	p := w.Projects[lifecycletest.Project]
	p.Stages = []lifecycle.Stage{{Name: "plan"},
		{Name: "review", Gate: &lifecycle.Gate{Approval: &lifecycle.Approval{Approvers: lifecycle.TriggerAllow{Users: []string{"dana"}}, MaxRejections: 2}}}}
	sl := p.Labels(w.Labels)
	ctx := t.Context()
	park := func(labels ...string) int {
		n := w.Sim.CreateIssue(lifecycletest.Repo, "parked", "", append(labels, sl.Label(lifecycle.AwaitingApproval), sl.Stage("review"))...)
		ref := lifecycletest.Ref(n)
		if err := runstate.MarkParked(ctx, w.RDB, ref); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{keys.GateParked(ref.Key()), keys.GateRejections(ref.Key())} {
			if err := w.RDB.Set(ctx, k, "x", keys.GateTTL).Err(); err != nil {
				t.Fatal(err)
			}
		}
		return n
	}
	untriggered, closed, kept := park(), park("agent-smith"), park("agent-smith")
	if err := w.Sim.SetOpen(lifecycletest.Repo, closed, false); err != nil {
		t.Fatal(err)
	}
	moved := w.Sim.CreateIssue(lifecycletest.Repo, "moved on", "", "agent-smith", sl.Label(lifecycle.Enqueued), sl.Stage("review"))
	if err := runstate.MarkParked(ctx, w.RDB, lifecycletest.Ref(moved)); err != nil {
		t.Fatal(err)
	}
	g := gate.New(w.RDB, w.Claims, w.Queue, gate.Config{Instance: "test"})
	if err := NewGateKeeper(w.Claims, g, GateKeeperConfig{}).Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	for n, cause := range map[int]string{untriggered: lifecycle.CauseUntriggered, closed: lifecycle.CauseClosed} {
		if s := w.State(t, n); s != lifecycle.Failed {
			t.Errorf("issue %d (%s): state %s, want failed", n, cause, s)
		}
		if c := w.Comments(t, n); len(c) != 1 || !strings.Contains(c[0], "cancelled ("+cause+")") {
			t.Errorf("issue %d: comments %q, want one saying cancelled (%s)", n, c, cause)
		}
		k := lifecycletest.Ref(n).Key()
		if left, _ := w.RDB.Exists(ctx, keys.GateParked(k), keys.GateRejections(k)).Result(); left != 0 {
			t.Errorf("issue %d: %d gate records left", n, left)
		}
	}
	if s := w.State(t, kept); s != lifecycle.AwaitingApproval {
		t.Errorf("triggered parked ticket: state %s, want still awaiting-approval", s)
	}
	refs, err := runstate.ParkedRefs(ctx, w.RDB)
	if err != nil || len(refs) != 1 || refs[0] != lifecycletest.Ref(kept) {
		t.Errorf("parked index %+v %v, want only the ticket still parked", refs, err)
	}
	var cancelled int
	for _, wr := range w.Sim.Writes() {
		if w.Labels.StateOf(wr.Before) == lifecycle.AwaitingApproval && w.Labels.StateOf(wr.After) == lifecycle.Failed {
			cancelled++
		}
	}
	if cancelled != 2 {
		t.Errorf("%d moves awaiting-approval → failed, want 2", cancelled)
	}
}
