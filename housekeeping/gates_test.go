package housekeeping

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/gate"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
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
		n := w.Sim.CreateIssue(lifecycletest.Repo, "parked at "+stage, "", sl.Label(lifecycle.AwaitingApproval), sl.Stage(stage))
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

// TestGateKeeperMendsParkedIndex: a cycle lists a ticket parked without
// its index entry (a replica died between the park and the index write),
// drops the entry of a ticket no longer parked, and keeps a fresh entry
// the listing may not show yet and the entries of tickets still parked.
func TestGateKeeperMendsParkedIndex(t *testing.T) {
	w := lifecycletest.New(t, 3)
	p := w.Projects[lifecycletest.Project]
	p.Stages = []lifecycle.Stage{{Name: "plan"},
		{Name: "review", Gate: &lifecycle.Gate{Approval: &lifecycle.Approval{Approvers: lifecycle.TriggerAllow{Users: []string{"dana"}}, MaxRejections: 2}}}}
	sl := p.Labels(w.Labels)
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	ctx := t.Context()
	unindexed := w.Sim.CreateIssue(lifecycletest.Repo, "parked, no entry", "", sl.Label(lifecycle.AwaitingApproval), sl.Stage("review"))
	if err := w.RDB.Set(ctx, keys.GateParked(lifecycletest.Ref(unindexed).Key()), lifecycle.ParkedStamp(now.Add(-time.Hour)), keys.GateTTL).Err(); err != nil {
		t.Fatal(err)
	}
	indexed := w.Sim.CreateIssue(lifecycletest.Repo, "parked, entry", "", sl.Label(lifecycle.AwaitingApproval), sl.Stage("review"))
	gone := w.Sim.CreateIssue(lifecycletest.Repo, "moved on by hand", "", sl.Label(lifecycle.Enqueued), sl.Stage("review"))
	fresh := w.Sim.CreateIssue(lifecycletest.Repo, "parked a moment ago", "", sl.Label(lifecycle.Enqueued), sl.Stage("review"))
	for n, since := range map[int]time.Time{indexed: now.Add(-time.Hour), gone: now.Add(-time.Hour), fresh: now.Add(-time.Second)} {
		if err := lifecycle.Park(ctx, w.RDB, lifecycle.ParkedEntry{Ref: lifecycletest.Ref(n), Stage: "review", Since: since}); err != nil {
			t.Fatal(err)
		}
	}
	g := gate.New(w.RDB, w.Claims, w.Queue, gate.Config{Instance: "test", Clock: func() time.Time { return now }})
	k := NewGateKeeper(w.Claims, g, GateKeeperConfig{Interval: time.Minute, Clock: func() time.Time { return now }})
	if err := k.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	listed, total, err := lifecycle.ListParked(ctx, w.RDB, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range listed {
		got = append(got, e.Ref.ID)
	}
	want := []string{lifecycletest.Ref(unindexed).ID, lifecycletest.Ref(indexed).ID, lifecycletest.Ref(fresh).ID}
	if total != 3 || !slices.Equal(got, want) {
		t.Fatalf("parked index %q (total %d), want %q", got, total, want)
	}
	if e := listed[0]; e.Title != "parked, no entry" || e.Stage != "review" || !e.Since.Equal(now.Add(-time.Hour)) {
		t.Errorf("mended entry %+v: want its title, stage review and its GateParked time", e)
	}
}

// TestGateKeeperCarriesOutDecisionLabels: a decision label left on a
// parked ticket (its webhook answered, the replica dead before the
// decision, or the ticket's lock held then) is carried out by the next
// cycle: the approval starts the gated stage, the rejection sends the
// ticket back to the stage before, each label removed. A ticket without
// one stays parked.
func TestGateKeeperCarriesOutDecisionLabels(t *testing.T) {
	w := lifecycletest.New(t, 3)
	p := w.Projects[lifecycletest.Project]
	approval := &lifecycle.Gate{Approval: &lifecycle.Approval{Approvers: lifecycle.TriggerAllow{Users: []string{"dana"}}, MaxRejections: 2}}
	p.Stages = []lifecycle.Stage{{Name: "plan"}, {Name: "review", Gate: approval}}
	sl := p.Labels(w.Labels)
	park := func(decision string) int {
		n := w.Sim.CreateIssue(lifecycletest.Repo, "parked", "", sl.Label(lifecycle.AwaitingApproval), sl.Stage("review"))
		if decision != "" {
			if err := w.Sim.As("dana").AddLabels(lifecycletest.Repo, n, decision); err != nil {
				t.Fatal(err)
			}
		}
		return n
	}
	approved, rejected, waiting := park(sl.Approved()), park(sl.Rejected()), park("")
	g := gate.New(w.RDB, w.Claims, w.Queue, gate.Config{Instance: "test"})
	if err := NewGateKeeper(w.Claims, g, GateKeeperConfig{}).Cycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]struct {
		s     lifecycle.State
		stage string
	}{approved: {lifecycle.Enqueued, "review"}, rejected: {lifecycle.Enqueued, "plan"}, waiting: {lifecycle.AwaitingApproval, "review"}} {
		is, _ := w.Sim.Issue(lifecycletest.Repo, n)
		if s, at := w.State(t, n), sl.StageOf(is.Labels); s != want.s || !p.SameStage(at, want.stage) {
			t.Errorf("issue %d: %s at stage %s, want %s at stage %s", n, s, at, want.s, want.stage)
		}
		if slices.Contains(is.Labels, sl.Approved()) || slices.Contains(is.Labels, sl.Rejected()) {
			t.Errorf("issue %d keeps a decision label: %v", n, is.Labels)
		}
	}
}
