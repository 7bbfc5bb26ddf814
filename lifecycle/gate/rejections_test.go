package gate_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/gate"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// repark puts issue n back in awaiting-approval of stage, as the stage
// before parking it again would.
func repark(t *testing.T, w *lifecycletest.World, n int, stage string) {
	t.Helper()
	sl := w.Projects[lifecycletest.Project].Labels(w.Labels)
	for _, l := range labelsOf(t, w, n) {
		if err := w.Sim.RemoveLabel(lifecycletest.Repo, n, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Sim.AddLabels(lifecycletest.Repo, n, "agent-smith", sl.Label(lifecycle.AwaitingApproval), sl.Stage(stage)); err != nil {
		t.Fatal(err)
	}
}

// Each gate counts its own rejections: with max_rejections 1 on both
// implement and test, a rejection of implement leaves test's first
// rejection a send-back, not a failure; test's second fails the ticket.
func TestRejectionsCountPerGatedStage(t *testing.T) {
	w, g, n := staged(t, 1)
	p := w.Projects[lifecycletest.Project]
	p.Stages = append(p.Stages, lifecycle.Stage{Name: "test", Gate: &lifecycle.Gate{Approval: &lifecycle.Approval{
		Approvers: lifecycle.TriggerAllow{Users: []string{"dana"}}, MaxRejections: 1}}})
	ref := lifecycletest.Ref(n)
	reject := func(want string) {
		t.Helper()
		res, err := g.Decide(t.Context(), ref, "dana", gate.Decision{Kind: gate.Reject, Reason: "again"})
		if err != nil || res.Outcome != want {
			t.Fatalf("rejection: %+v %v, want %s", res, err, want)
		}
	}
	reject(gate.OutcomeRejected) // implement's first
	repark(t, w, n, "test")
	reject(gate.OutcomeRejected) // test's first: implement's is not test's
	if st := p.Labels(w.Labels).StageOf(labelsOf(t, w, n)); st != "implement" || w.State(t, n) != lifecycle.Enqueued {
		t.Errorf("after test's first rejection: %s at %q, want enqueued at implement", w.State(t, n), st)
	}
	repark(t, w, n, "test")
	reject(gate.OutcomeFailed) // test's second
}

// failDecisionRecordOnce fails the first SET of a gate decision record
// once armed, as a Redis error between a rejection's count and its record
// would.
type failDecisionRecordOnce struct{ armed atomic.Bool }

func (h *failDecisionRecordOnce) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *failDecisionRecordOnce) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *failDecisionRecordOnce) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.EqualFold(cmd.Name(), "set") && len(cmd.Args()) > 1 && strings.Contains(cmd.Args()[1].(string), "gate-decision:") &&
			h.armed.CompareAndSwap(true, false) {
			err := errors.New("injected: connection reset")
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

// A rejection that failed before its move (its record could not be
// written) is not counted: the reviewer's next rejection is the first,
// so with max_rejections 1 it sends the ticket back instead of failing it.
func TestFailedRejectionIsNotCounted(t *testing.T) {
	w, _, n := staged(t, 1)
	rdb := w.Redis.Client(t)
	hook := &failDecisionRecordOnce{}
	hook.armed.Store(true)
	rdb.AddHook(hook)
	g := gate.New(rdb, w.Claims, w.Queue, gate.Config{Instance: "test"})
	ref := lifecycletest.Ref(n)
	if _, err := g.Decide(t.Context(), ref, "dana", gate.Decision{Kind: gate.Reject, Reason: "thin"}); err == nil {
		t.Fatal("rejection with its record failing: no error")
	}
	if s := w.State(t, n); s != lifecycle.AwaitingApproval {
		t.Fatalf("state %s after the failed rejection, want still awaiting-approval", s)
	}
	res, err := g.Decide(t.Context(), ref, "dana", gate.Decision{Kind: gate.Reject, Reason: "thin"})
	if err != nil || res.Outcome != gate.OutcomeRejected {
		t.Fatalf("rejection again: %+v %v, want rejected (the first of 1)", res, err)
	}
	if got, err := w.RDB.HGet(t.Context(), keys.GateRejections(ref.Key()), "implement").Int(); err != nil || got != 1 {
		t.Errorf("implement's rejections %d %v, want 1", got, err)
	}
}

// A rejection whose label write the tracker refused is not counted until
// its move lands: the record kept carries it out once, counting it once.
func TestRefusedRejectionCountsOnceWhenItLands(t *testing.T) {
	w, g, n := staged(t, 1)
	ref := lifecycletest.Ref(n)
	w.Sim.RefuseLabelWrites(lifecycletest.Repo, n, true)
	if _, err := g.Decide(t.Context(), ref, "dana", gate.Decision{Kind: gate.Reject, Reason: "thin"}); err == nil {
		t.Fatal("rejection with its label write refused: no error")
	}
	if got, err := w.RDB.HGet(t.Context(), keys.GateRejections(ref.Key()), "implement").Int(); !errors.Is(err, redis.Nil) {
		t.Errorf("implement's rejections %d %v after the refused write, want none", got, err)
	}
	w.Sim.RefuseLabelWrites(lifecycletest.Repo, n, false)
	if found, err := g.Repair(t.Context(), ref); err != nil || !found {
		t.Fatalf("repair: %v %v", found, err)
	}
	if st := w.Projects[lifecycletest.Project].Labels(w.Labels).StageOf(labelsOf(t, w, n)); st != "plan" || w.State(t, n) != lifecycle.Enqueued {
		t.Errorf("after the repair: %s at %q, want enqueued at plan", w.State(t, n), st)
	}
	if got, err := w.RDB.HGet(t.Context(), keys.GateRejections(ref.Key()), "implement").Int(); err != nil || got != 1 {
		t.Errorf("implement's rejections %d %v, want 1", got, err)
	}
}
