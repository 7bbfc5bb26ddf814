package housekeeping

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/gate"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
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
		n := w.Sim.CreateIssue(lifecycletest.Repo, "parked at "+stage, "", p.TriggerLabel, sl.Label(lifecycle.AwaitingApproval), sl.Stage(stage))
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
	unindexed := w.Sim.CreateIssue(lifecycletest.Repo, "parked, no entry", "", p.TriggerLabel, sl.Label(lifecycle.AwaitingApproval), sl.Stage("review"))
	if err := w.RDB.Set(ctx, keys.GateParked(lifecycletest.Ref(unindexed).Key()), lifecycle.ParkedStamp(now.Add(-time.Hour)), keys.GateTTL).Err(); err != nil {
		t.Fatal(err)
	}
	indexed := w.Sim.CreateIssue(lifecycletest.Repo, "parked, entry", "", p.TriggerLabel, sl.Label(lifecycle.AwaitingApproval), sl.Stage("review"))
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
	listed, total, got := parkedIndex(t, w)
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
		n := w.Sim.CreateIssue(lifecycletest.Repo, "parked", "", p.TriggerLabel, sl.Label(lifecycle.AwaitingApproval), sl.Stage("review"))
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

// TestGateKeeperCancelsParkedClosedOrUntriggered: a parked ticket that
// lost its trigger label (listed) and one closed (missing from the open
// listing, its parked index entry read afresh) leave the gate as an
// Enqueued ticket would: Failed, outcome cancelled, one comment with the
// cause, their gate records and index entries gone. The entry of a
// ticket closed and no longer parked is dropped; a closed parked ticket
// whose entry is fresher than the listing's grace keeps it, parked, until
// a later cycle; a parked ticket with its trigger label stays.
func TestGateKeeperCancelsParkedClosedOrUntriggered(t *testing.T) {
	w := lifecycletest.New(t, 3)
	p := w.Projects[lifecycletest.Project]
	p.Stages = []lifecycle.Stage{{Name: "plan"},
		{Name: "review", Gate: &lifecycle.Gate{Approval: &lifecycle.Approval{Approvers: lifecycle.TriggerAllow{Users: []string{"dana"}}, MaxRejections: 2}}}}
	sl := p.Labels(w.Labels)
	ctx := t.Context()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	index := func(n int, since time.Time) {
		ref := lifecycletest.Ref(n)
		if err := lifecycle.Park(ctx, w.RDB, lifecycle.ParkedEntry{Ref: ref, Stage: "review", Title: "parked", Since: since}); err != nil {
			t.Fatal(err)
		}
		if err := w.RDB.Set(ctx, keys.GateRejections(ref.Key()), "x", keys.GateTTL).Err(); err != nil {
			t.Fatal(err)
		}
	}
	park := func(since time.Time, labels ...string) int {
		n := w.Sim.CreateIssue(lifecycletest.Repo, "parked", "", append(labels, sl.Label(lifecycle.AwaitingApproval), sl.Stage("review"))...)
		index(n, since)
		return n
	}
	old := now.Add(-time.Hour)
	untriggered, closed, kept, closedFresh := park(old), park(old, p.TriggerLabel), park(old, p.TriggerLabel), park(now.Add(-time.Second), p.TriggerLabel)
	closedMoved := w.Sim.CreateIssue(lifecycletest.Repo, "moved on, closed", "", p.TriggerLabel, sl.Label(lifecycle.Failed), sl.Stage("review"))
	index(closedMoved, old)
	for _, n := range []int{closed, closedFresh, closedMoved} {
		if err := w.Sim.SetOpen(lifecycletest.Repo, n, false); err != nil {
			t.Fatal(err)
		}
	}
	g := gate.New(w.RDB, w.Claims, w.Queue, gate.Config{Instance: "test", Clock: func() time.Time { return now }})
	if err := NewGateKeeper(w.Claims, g, GateKeeperConfig{Interval: time.Minute, Clock: func() time.Time { return now }}).Cycle(ctx); err != nil {
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
	for _, n := range []int{kept, closedFresh} {
		if s := w.State(t, n); s != lifecycle.AwaitingApproval {
			t.Errorf("issue %d: state %s, want still awaiting-approval", n, s)
		}
	}
	parkedIDs := func() []string {
		_, _, ids := parkedIndex(t, w)
		return ids
	}
	if got, want := parkedIDs(), []string{lifecycletest.Ref(kept).ID, lifecycletest.Ref(closedFresh).ID}; !slices.Equal(got, want) {
		t.Errorf("parked index %q, want %q: the tickets still parked", got, want)
	}
	cancelled := func() int {
		n := 0
		for _, wr := range w.Sim.Writes() {
			if w.Labels.StateOf(wr.Before) == lifecycle.AwaitingApproval && w.Labels.StateOf(wr.After) == lifecycle.Failed {
				n++
			}
		}
		return n
	}
	if n := cancelled(); n != 2 {
		t.Errorf("%d moves awaiting-approval → failed, want 2", n)
	}

	// Past the grace, the closed ticket parked a moment before leaves the
	// gate too, never only its entry.
	now = now.Add(2 * time.Minute)
	if err := NewGateKeeper(w.Claims, g, GateKeeperConfig{Interval: time.Minute, Clock: func() time.Time { return now }}).Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if s := w.State(t, closedFresh); s != lifecycle.Failed {
		t.Errorf("closed ticket parked a moment before: state %s after the grace, want failed", s)
	}
	if got, want := parkedIDs(), []string{lifecycletest.Ref(kept).ID}; !slices.Equal(got, want) {
		t.Errorf("parked index %q, want %q", got, want)
	}
	if n := cancelled(); n != 3 {
		t.Errorf("%d moves awaiting-approval → failed, want 3", n)
	}
}

// parkedIndex is the parked index (lifecycle.ListParked), its total and
// its tickets' ids, longest waiting first.
func parkedIndex(t *testing.T, w *lifecycletest.World) ([]lifecycle.ParkedEntry, int64, []string) {
	t.Helper()
	listed, total, err := lifecycle.ListParked(t.Context(), w.RDB, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range listed {
		ids = append(ids, e.Ref.ID)
	}
	return listed, total, ids
}

// TestGateKeeperDecidesBeforeTheDeadline: a person's approval label on a
// ticket past its gate's deadline (added in time; the webhook's replica
// died before deciding) is carried out, not failed by the deadline.
func TestGateKeeperDecidesBeforeTheDeadline(t *testing.T) {
	w := lifecycletest.New(t, 3)
	p := w.Projects[lifecycletest.Project]
	p.Stages = []lifecycle.Stage{{Name: "plan"},
		{Name: "review", Gate: &lifecycle.Gate{Approval: &lifecycle.Approval{Approvers: lifecycle.TriggerAllow{Users: []string{"dana"}}, MaxRejections: 2,
			Timeout: time.Hour, OnTimeout: lifecycle.OnTimeoutFail}}}}
	sl := p.Labels(w.Labels)
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	n := w.Sim.CreateIssue(lifecycletest.Repo, "parked", "", p.TriggerLabel, sl.Label(lifecycle.AwaitingApproval), sl.Stage("review"))
	if err := w.RDB.Set(t.Context(), keys.GateParked(lifecycletest.Ref(n).Key()), lifecycle.ParkedStamp(now.Add(-61*time.Minute)), keys.GateTTL).Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.Sim.As("dana").AddLabels(lifecycletest.Repo, n, sl.Approved()); err != nil {
		t.Fatal(err)
	}
	g := gate.New(w.RDB, w.Claims, w.Queue, gate.Config{Instance: "test", Clock: func() time.Time { return now }})
	if err := NewGateKeeper(w.Claims, g, GateKeeperConfig{Interval: time.Minute, Clock: func() time.Time { return now }}).Cycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	is, _ := w.Sim.Issue(lifecycletest.Repo, n)
	if s, at := w.State(t, n), sl.StageOf(is.Labels); s != lifecycle.Enqueued || !p.SameStage(at, "review") {
		t.Errorf("%s at stage %s (labels %q), want enqueued at review: the approval made in time was not honoured", s, at, is.Labels)
	}
}

// TestGateListedAnswersNobodyForADecidedLabel: a listing taken before a
// webhook carried out the approval label does not make the GateKeeper
// answer "not done" on the ticket the approval moved on.
func TestGateListedAnswersNobodyForADecidedLabel(t *testing.T) {
	w := lifecycletest.New(t, 3)
	p := w.Projects[lifecycletest.Project]
	p.Stages = []lifecycle.Stage{{Name: "plan"},
		{Name: "review", Gate: &lifecycle.Gate{Approval: &lifecycle.Approval{Approvers: lifecycle.TriggerAllow{Users: []string{"dana"}}, MaxRejections: 2}}}}
	sl := p.Labels(w.Labels)
	n := w.Sim.CreateIssue(lifecycletest.Repo, "parked", "", p.TriggerLabel, sl.Label(lifecycle.AwaitingApproval), sl.Stage("review"))
	if err := w.Sim.As("dana").AddLabels(lifecycletest.Repo, n, sl.Approved()); err != nil {
		t.Fatal(err)
	}
	ref := lifecycletest.Ref(n)
	listing, err := p.Tracker.Get(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	g := gate.New(w.RDB, w.Claims, w.Queue, gate.Config{Instance: "test"})
	if res, err := g.DecideByLabel(t.Context(), ref, "dana", true); err != nil || res.Outcome != gate.OutcomeApproved {
		t.Fatalf("webhook's decision: %+v, %v", res, err)
	}
	if err := g.Listed(t.Context(), p, []*platforms.Ticket{listing}); err != nil {
		t.Fatal(err)
	}
	for _, c := range w.Comments(t, n) {
		if strings.Contains(c, "not done") {
			t.Errorf("answered after the approval was carried out: %q", c)
		}
	}
	if s := w.State(t, n); s != lifecycle.Enqueued {
		t.Errorf("state %s, want enqueued", s)
	}
}
