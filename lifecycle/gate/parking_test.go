package gate_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/gate"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// heartbeatReads counts the commands that name one key (the ticket's run
// lock), as the gate's looks at it.
type heartbeatReads struct {
	key string
	n   atomic.Int32
}

func (h *heartbeatReads) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *heartbeatReads) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *heartbeatReads) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if slices.ContainsFunc(cmd.Args(), func(a any) bool { s, _ := a.(string); return s == h.key }) {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

// parking is a ticket parked at implement whose run still holds it, as a
// run that has written its last label and not yet let go leaves it: its
// heartbeat set. letGo finishes the run's park as the executor does: the
// park recorded (lifecycle.Park), then the heartbeat released.
func parking(t *testing.T, w *lifecycletest.World, n int) (letGo func()) {
	t.Helper()
	ref := lifecycletest.Ref(n)
	if err := w.RDB.Set(t.Context(), keys.Heartbeat(ref.Key()), "run-token", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := lifecycle.Park(context.Background(), w.RDB, lifecycle.ParkedEntry{Ref: ref, Stage: "implement", Title: "parked", Since: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if err := w.RDB.Del(context.Background(), keys.Heartbeat(ref.Key())).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// movedOn counts the moves out of awaiting-approval of issue n among the
// sim's label writes.
func movedOn(w *lifecycletest.World, n int) int {
	moves := 0
	for _, wr := range w.Sim.Writes() {
		if wr.Number == n && w.Labels.StateOf(wr.Before) == lifecycle.AwaitingApproval && w.Labels.StateOf(wr.After) != lifecycle.AwaitingApproval {
			moves++
		}
	}
	return moves
}

// approvedOnce checks that issue n was approved once: enqueued at
// implement, one request for it, one move, one reply naming the approver,
// no "not done" reply, no decision left recorded, and the parked index
// empty (the run's park was recorded before the decision dropped it).
func approvedOnce(t *testing.T, w *lifecycletest.World, n int, approver string) {
	t.Helper()
	p := w.Projects[lifecycletest.Project]
	if s, at := w.State(t, n), p.Labels(w.Labels).StageOf(labelsOf(t, w, n)); s != lifecycle.Enqueued || !p.SameStage(at, "implement") {
		t.Errorf("%s at stage %q, want enqueued at implement", s, at)
	}
	if reqs := w.Requests(t); len(reqs) != 1 || reqs[0].Stage != "implement" {
		t.Errorf("queue %+v, want one request for implement", reqs)
	}
	if m := movedOn(w, n); m != 1 {
		t.Errorf("%d moves out of awaiting-approval, want 1", m)
	}
	approved, notDone := 0, 0
	for _, c := range w.Comments(t, n) {
		if strings.Contains(c, "approved by "+approver) {
			approved++
		}
		if strings.Contains(c, "not done") {
			notDone++
		}
	}
	if approved != 1 || notDone != 0 {
		t.Errorf("comments %q: want one approval reply naming %s and no refusal", w.Comments(t, n), approver)
	}
	ref := lifecycletest.Ref(n)
	if left, err := w.RDB.Exists(t.Context(), keys.GateDecision(ref.Key()), keys.GateParked(ref.Key())).Result(); err != nil || left != 0 {
		t.Errorf("%d decision or park records left (%v), want none", left, err)
	}
	if parked, total, err := lifecycle.ListParked(t.Context(), w.RDB, 0); err != nil || total != 0 {
		t.Errorf("parked index %+v (total %d, %v), want empty", parked, total, err)
	}
}

// A decision that finds the ticket's run still holding it (the run wrote
// its last label, as GitHub REST's first of two writes already reads
// awaiting-approval, and has not let go) waits under the claim lock for
// the run to let go, then reads the ticket again and carries the decision
// out once: the run's label write is never raced, and the approved stage's
// request is pushed after the run released the ticket.
func TestDecisionWaitsForTheRunParkingTheTicket(t *testing.T) {
	w, _, n := staged(t, 2)
	ref := lifecycletest.Ref(n)
	rdb := w.Redis.Client(t)
	reads := &heartbeatReads{key: keys.Heartbeat(ref.Key())}
	rdb.AddHook(reads)
	g := gate.New(rdb, w.Claims, w.Queue, gate.Config{Instance: "test", RunWait: time.Minute, RunPoll: time.Millisecond})
	letGo := parking(t, w, n)
	before := len(w.Sim.Writes())

	type answer struct {
		res claim.CommandResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := g.Decide(context.Background(), ref, "erin", gate.Decision{Kind: gate.Approve})
		done <- answer{res, err}
	}()
	eventually.Wait(t, 10*time.Second, "the decision to look at the run's lock again", func() bool {
		select {
		case a := <-done:
			t.Fatalf("decision answered %+v %v while the run held the ticket; want it to wait", a.res, a.err)
		default:
		}
		return reads.n.Load() >= 3
	})
	if s := w.State(t, n); s != lifecycle.AwaitingApproval || len(w.Sim.Writes()) != before || len(w.Requests(t)) != 0 {
		t.Fatalf("while the run holds the ticket: %s, %d writes, %d requests; want it untouched", s, len(w.Sim.Writes())-before, len(w.Requests(t)))
	}

	letGo()
	a := eventually.Value(t, 10*time.Second, "the decision's answer once the run let go", func() (answer, bool) {
		select {
		case a := <-done:
			return a, true
		default:
			return answer{}, false
		}
	})
	if a.err != nil || a.res.Outcome != gate.OutcomeApproved {
		t.Fatalf("decision %+v %v, want approved", a.res, a.err)
	}
	approvedOnce(t, w, n, "erin")
}

// A run that holds the ticket past the gate's RunWait gets the decision
// (a comment command, or a decision label, which stays on the ticket)
// recorded, not carried out, and its maker told so (no refusal); the
// GateKeeper leaves it while the run still holds the ticket and carries
// it out, once, at its first cycle after the run let go, its listing's
// decision label then found gone without a word.
func TestDecisionRecordedWhileTheRunHoldsIsCarriedOutLater(t *testing.T) {
	for _, by := range []string{"command", "label"} {
		t.Run(by, func(t *testing.T) {
			w, _, n := staged(t, 2)
			ref := lifecycletest.Ref(n)
			g := gate.New(w.RDB, w.Claims, w.Queue, gate.Config{Instance: "test", RunWait: 5 * time.Millisecond, RunPoll: time.Millisecond})
			letGo := parking(t, w, n)
			decide := func() (claim.CommandResult, error) {
				return g.Decide(t.Context(), ref, "erin", gate.Decision{Kind: gate.Approve})
			}
			if by == "label" {
				if err := w.Sim.As("erin").AddLabels(lifecycletest.Repo, n, w.Projects[lifecycletest.Project].Labels(w.Labels).Approved()); err != nil {
					t.Fatal(err)
				}
				decide = func() (claim.CommandResult, error) { return g.DecideByLabel(t.Context(), ref, "erin", true) }
			}
			before := len(w.Sim.Writes())

			res, err := decide()
			if err != nil || res.Outcome != gate.OutcomeRecorded {
				t.Fatalf("decision %+v %v, want recorded", res, err)
			}
			if c := w.Comments(t, n); len(c) != 1 || !strings.Contains(c[0], "approve by erin recorded: carried out once stage implement has finished parking") {
				t.Errorf("comments %q, want one saying the approval is recorded and when it is carried out", c)
			}
			if ok, err := w.RDB.Exists(t.Context(), keys.GateDecision(ref.Key())).Result(); err != nil || ok != 1 {
				t.Fatalf("decision record: %d %v, want it kept", ok, err)
			}

			keeper := housekeeping.NewGateKeeper(w.Claims, g, housekeeping.GateKeeperConfig{})
			if err := keeper.Cycle(t.Context()); err != nil {
				t.Fatal(err)
			}
			if s := w.State(t, n); s != lifecycle.AwaitingApproval || len(w.Sim.Writes()) != before || len(w.Requests(t)) != 0 {
				t.Fatalf("GateKeeper while the run holds the ticket: %s, %d writes, %d requests; want it untouched", s, len(w.Sim.Writes())-before, len(w.Requests(t)))
			}

			letGo()
			if err := keeper.Cycle(t.Context()); err != nil {
				t.Fatal(err)
			}
			approvedOnce(t, w, n, "erin")
			if err := keeper.Cycle(t.Context()); err != nil {
				t.Fatal(err)
			}
			if m, q := movedOn(w, n), len(w.Requests(t)); m != 1 || q != 1 {
				t.Errorf("after another cycle: %d moves, %d requests; want the decision carried out once", m, q)
			}
		})
	}
}
