package runstate_test

import (
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// An outcome is recorded and changed only under the run lock; while it
// waits no run of its ticket can be taken, even with the lock free; it is
// adopted only from a free lock or from the departed run named, and
// dropped only by the lock's holder.
func TestOutcomeRecordIsFencedAndHoldsTheTicket(t *testing.T) {
	rdb := client(t)
	ctx := t.Context()
	now := time.UnixMilli(1_800_000_000_000)
	if res, _ := take(t, rdb, "1", "run-1", 1, time.Minute, now, nil); res != runstate.Taken {
		t.Fatalf("take %v", res)
	}
	o := runstate.Outcome{Ref: ref("1"), Token: "run-1", Attempt: 1, To: "done", Body: "ok", Recorded: now}
	if ok, err := runstate.PutOutcome(ctx, rdb, "someone-else", o); err != nil || ok {
		t.Fatalf("put by a token not holding the run: %v %v, want refused", ok, err)
	}
	if ok, err := runstate.PutOutcome(ctx, rdb, "run-1", o); err != nil || !ok {
		t.Fatalf("put by the run: %v %v", ok, err)
	}
	// The run lets go of its lock (it gave up on the tracker): the ticket
	// is still not free to run.
	if mine, err := runstate.Release(ctx, rdb, ref("1"), "run-1", false); err != nil || !mine {
		t.Fatalf("release %v %v", mine, err)
	}
	if res, _ := take(t, rdb, "1", "run-2", 2, time.Minute, now, nil); res != runstate.Held {
		t.Fatalf("take with an outcome waiting: %v, want held", res)
	}
	if running, err := runstate.Running(ctx, rdb, ref("1")); err != nil || !running {
		t.Fatalf("Running with an outcome waiting: %v %v, want true", running, err)
	}
	got, ok, err := runstate.OutcomeOf(ctx, rdb, ref("1"))
	if err != nil || !ok || got.Body != "ok" || got.To != "done" {
		t.Fatalf("OutcomeOf = %+v %v %v", got, ok, err)
	}
	// A finisher adopts it from the free lock; a second cannot.
	if a, err := runstate.AdoptOutcome(ctx, rdb, ref("1"), "fin-1", "", time.Minute); err != nil || a != runstate.Adopted {
		t.Fatalf("adopt %v %v", a, err)
	}
	if a, err := runstate.AdoptOutcome(ctx, rdb, ref("1"), "fin-2", "run-1", time.Minute); err != nil || a != runstate.Busy {
		t.Fatalf("second adopt %v %v, want busy", a, err)
	}
	if ok, err := runstate.DropOutcome(ctx, rdb, ref("1"), "run-1"); err != nil || ok {
		t.Fatalf("drop by the departed run: %v %v, want refused", ok, err)
	}
	if ok, err := runstate.DropOutcome(ctx, rdb, ref("1"), "fin-1"); err != nil || !ok {
		t.Fatalf("drop by the finisher: %v %v", ok, err)
	}
	if n, _ := rdb.HLen(ctx, keys.Outcomes()).Result(); n != 0 {
		t.Fatalf("%d outcomes left", n)
	}
	if a, err := runstate.AdoptOutcome(ctx, rdb, ref("1"), "fin-3", "fin-1", time.Minute); err != nil || a != runstate.Finished {
		t.Fatalf("adopt after the drop %v %v, want finished", a, err)
	}
	if _, err := runstate.Release(ctx, rdb, ref("1"), "fin-1", true); err != nil {
		t.Fatal(err)
	}
	if res, _ := take(t, rdb, "1", "run-3", 2, time.Minute, now, nil); res != runstate.Taken {
		t.Fatalf("take once the outcome is written: %v", res)
	}
}

// A dead run's lock (its token named as departed) is adopted at once,
// without waiting for its heartbeat to expire; and Outcomes lists the
// records oldest first, deleting one that does not decode.
func TestOutcomeAdoptedFromADeadRunAndListed(t *testing.T) {
	rdb := client(t)
	ctx := t.Context()
	now := time.UnixMilli(1_800_000_000_000)
	for i, id := range []string{"2", "1"} {
		tok := "run-" + id
		if res, _ := take(t, rdb, id, tok, 1, time.Minute, now, nil); res != runstate.Taken {
			t.Fatalf("take %v", res)
		}
		o := runstate.Outcome{Ref: ref(id), Token: tok, To: "failed", Recorded: now.Add(time.Duration(i) * time.Second)}
		if ok, err := runstate.PutOutcome(ctx, rdb, tok, o); err != nil || !ok {
			t.Fatalf("put %v %v", ok, err)
		}
	}
	if err := rdb.HSet(ctx, keys.Outcomes(), "github:junk", "{not json").Err(); err != nil {
		t.Fatal(err)
	}
	list, err := runstate.Outcomes(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Ref.ID != "2" || list[1].Ref.ID != "1" {
		t.Fatalf("Outcomes = %+v, want 2 then 1", list)
	}
	if ok, _ := rdb.HExists(ctx, keys.Outcomes(), "github:junk").Result(); ok {
		t.Fatal("undecodable record kept")
	}
	if a, err := runstate.AdoptOutcome(ctx, rdb, ref("1"), "fin", "", time.Minute); err != nil || a != runstate.Busy {
		t.Fatalf("adopt a live-looking lock %v %v, want busy", a, err)
	}
	if a, err := runstate.AdoptOutcome(ctx, rdb, ref("1"), "fin", "run-1", time.Minute); err != nil || a != runstate.Adopted {
		t.Fatalf("adopt from the dead run %v %v", a, err)
	}
	if holder, _, _ := runstate.Holder(ctx, rdb, ref("1")); holder != "fin" {
		t.Fatalf("holder %q, want fin", holder)
	}
}
