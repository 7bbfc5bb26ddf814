package gate_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/gate"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// staged gives the world's project the stages plan → implement (gated,
// approvers: dana) and returns a gate and a ticket parked before
// implement.
func staged(t *testing.T, maxRejections int) (*lifecycletest.World, *gate.Gate, int) {
	t.Helper()
	w := lifecycletest.New(t, 3)
	p := w.Projects[lifecycletest.Project]
	p.Stages = []lifecycle.Stage{{Name: "plan"}, {Name: "implement", Gate: &lifecycle.Gate{Approval: &lifecycle.Approval{
		Approvers: lifecycle.TriggerAllow{Users: []string{"dana", "erin"}}, MaxRejections: maxRejections, DistinctFromTrigger: true}}}}
	sl := p.Labels(w.Labels)
	n := w.Sim.CreateIssue(lifecycletest.Repo, "parked", "", "agent-smith", sl.Label(lifecycle.AwaitingApproval), sl.Stage("implement"))
	return w, gate.New(w.RDB, w.Claims, w.Queue, gate.Config{Instance: "test"}), n
}

func labelsOf(t *testing.T, w *lifecycletest.World, n int) []string {
	t.Helper()
	is, _ := w.Sim.Issue(lifecycletest.Repo, n)
	return is.Labels
}

// Two approvals at once move the ticket once and queue one request: the
// claim lock and the fresh read under it keep them apart.
func TestTwoApprovalsAtOnceMoveOnce(t *testing.T) {
	w, g, n := staged(t, 2)
	before := len(w.Sim.Writes())
	var wg sync.WaitGroup
	results := make([]claim.CommandResult, 2)
	for i, who := range []string{"dana", "erin"} {
		wg.Go(func() {
			res, err := g.Decide(t.Context(), lifecycletest.Ref(n), who, gate.Decision{Kind: gate.Approve})
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		})
	}
	wg.Wait()
	approved := 0
	for _, r := range results {
		if r.Outcome == gate.OutcomeApproved {
			approved++
		}
	}
	if approved != 1 {
		t.Errorf("results %+v: want exactly one approval carried out", results)
	}
	if reqs := w.Requests(t); len(reqs) != 1 || reqs[0].Stage != "implement" || reqs[0].Source != lifecycle.SourceGate {
		t.Errorf("queue %+v, want one request for implement", reqs)
	}
	moves := 0
	for _, wr := range w.Sim.Writes()[before:] {
		if wr.Number == n && w.Labels.StateOf(wr.Before) == lifecycle.AwaitingApproval && w.Labels.StateOf(wr.After) == lifecycle.Enqueued {
			moves++
		}
	}
	if moves != 1 {
		t.Errorf("%d moves awaiting-approval → enqueued, want 1", moves)
	}
	if s := w.State(t, n); s != lifecycle.Enqueued {
		t.Errorf("state %s, want enqueued", s)
	}
}

// An outsider's approval and the trigger's own are refused: the ticket
// stays parked, nothing queued.
func TestOutsiderAndTriggerAreRefused(t *testing.T) {
	w, g, n := staged(t, 2)
	if err := w.RDB.Set(t.Context(), keys.RunTrigger(lifecycletest.Ref(n).Key()), "dana", keys.GateTTL).Err(); err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"mallory", "dana", ""} {
		res, err := g.Decide(t.Context(), lifecycletest.Ref(n), who, gate.Decision{Kind: gate.Approve})
		if err != nil || res.Outcome != claim.CommandRefused {
			t.Errorf("approval by %q: %+v %v, want refused", who, res, err)
		}
	}
	if s := w.State(t, n); s != lifecycle.AwaitingApproval {
		t.Errorf("state %s, want still awaiting-approval", s)
	}
	if reqs := w.Requests(t); len(reqs) != 0 {
		t.Errorf("queue %+v, want empty", reqs)
	}
	if res, err := g.Decide(t.Context(), lifecycletest.Ref(n), "erin", gate.Decision{Kind: gate.Approve}); err != nil || res.Outcome != gate.OutcomeApproved {
		t.Errorf("approval by another approver: %+v %v", res, err)
	}
}

// A rejection sends the ticket back to the stage before with the review;
// the one past max_rejections fails it with a comment and no label of
// the gate left.
func TestRejectionsThenFailure(t *testing.T) {
	w, g, n := staged(t, 1)
	ref := lifecycletest.Ref(n)
	sl := w.Projects[lifecycletest.Project].Labels(w.Labels)
	res, err := g.Decide(t.Context(), ref, "dana", gate.Decision{Kind: gate.Reject, Reason: "plan misses the migration\x1b[31m"})
	if err != nil || res.Outcome != gate.OutcomeRejected {
		t.Fatalf("first rejection: %+v %v", res, err)
	}
	if got := sl.StageOf(labelsOf(t, w, n)); got != "plan" || w.State(t, n) != lifecycle.Enqueued {
		t.Errorf("after the rejection: %q, want enqueued at plan", labelsOf(t, w, n))
	}
	if review, err := runstate.Review(t.Context(), w.RDB, ref); err != nil || review != "plan misses the migration[31m" {
		t.Errorf("review %q %v, want the text without control characters", review, err)
	}
	// The stage before ran again and parked the ticket once more.
	is, _ := w.Sim.Issue(lifecycletest.Repo, n)
	for _, l := range is.Labels {
		if err := w.Sim.RemoveLabel(lifecycletest.Repo, n, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Sim.AddLabels(lifecycletest.Repo, n, "agent-smith", sl.Label(lifecycle.AwaitingApproval), sl.Stage("implement"), sl.Rejected()); err != nil {
		t.Fatal(err)
	}
	res, err = g.DecideByLabel(t.Context(), ref, "erin", false)
	if err != nil || res.Outcome != gate.OutcomeFailed {
		t.Fatalf("second rejection: %+v %v, want failed", res, err)
	}
	got, want := labelsOf(t, w, n), []string{"agent-smith", sl.Label(lifecycle.Failed), sl.Stage("implement")}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("labels %q, want failed with the stage kept and the rejected label gone", got)
	}
}

// A decision recorded for an earlier park (an approve of implement whose
// drop failed) is not carried out on a later park at another stage: a
// decision or a repair drops it and the ticket stays parked.
func TestStaleDecisionIsNotReplayed(t *testing.T) {
	w, g, n := staged(t, 2)
	p := w.Projects[lifecycletest.Project]
	p.Stages = append(p.Stages, lifecycle.Stage{Name: "test", Gate: &lifecycle.Gate{Approval: &lifecycle.Approval{
		Approvers: lifecycle.TriggerAllow{Users: []string{"dana"}}, MaxRejections: 2}}})
	sl := p.Labels(w.Labels)
	ref := lifecycletest.Ref(n)
	if err := w.Sim.RemoveLabel(lifecycletest.Repo, n, sl.Stage("implement")); err != nil {
		t.Fatal(err)
	}
	if err := w.Sim.AddLabels(lifecycletest.Repo, n, sl.Stage("test")); err != nil {
		t.Fatal(err)
	}
	stale := `{"kind":"approve","actor":"dana","stage":"implement"}`
	if err := w.RDB.Set(t.Context(), keys.GateDecision(ref.Key()), stale, keys.GateTTL).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Repair(t.Context(), ref); err != nil {
		t.Fatal(err)
	}
	if s, st := w.State(t, n), sl.StageOf(labelsOf(t, w, n)); s != lifecycle.AwaitingApproval || st != "test" {
		t.Errorf("after the repair: %s at %q, want still awaiting approval of test", s, st)
	}
	if reqs := w.Requests(t); len(reqs) != 0 {
		t.Errorf("queue %+v, want empty", reqs)
	}
	if n, err := w.RDB.Exists(t.Context(), keys.GateDecision(ref.Key())).Result(); err != nil || n != 0 {
		t.Errorf("stale record kept (%d, %v), want dropped", n, err)
	}
	// A decision checked for a stage the ticket no longer awaits does nothing.
	if err := w.RDB.Set(t.Context(), keys.GateDecision(ref.Key()), stale, keys.GateTTL).Err(); err != nil {
		t.Fatal(err)
	}
	res, err := g.Decide(t.Context(), ref, "dana", gate.Decision{Kind: gate.Reject, Reason: "tests are thin"})
	if err != nil || res.Outcome != gate.OutcomeRejected {
		t.Fatalf("rejection of test: %+v %v", res, err)
	}
	if st := sl.StageOf(labelsOf(t, w, n)); st != "implement" || w.State(t, n) != lifecycle.Enqueued {
		t.Errorf("after the rejection: %s at %q, want enqueued at implement", w.State(t, n), st)
	}
}

// Under distinct_from_trigger an approval is refused when who triggered
// the run cannot be learned: it might be the approver.
func TestUnknownTriggerRefusesApproval(t *testing.T) {
	w, g, n := staged(t, 2)
	ref := lifecycletest.Ref(n)
	if err := w.RDB.Set(t.Context(), keys.RunTrigger(ref.Key()), "", keys.GateTTL).Err(); err != nil {
		t.Fatal(err)
	}
	res, err := g.Decide(t.Context(), ref, "dana", gate.Decision{Kind: gate.Approve})
	if err != nil || res.Outcome != claim.CommandRefused {
		t.Errorf("approval with the trigger unknown: %+v %v, want refused", res, err)
	}
	if s := w.State(t, n); s != lifecycle.AwaitingApproval {
		t.Errorf("state %s, want still awaiting-approval", s)
	}
}
