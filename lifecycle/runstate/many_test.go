package runstate_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// InspectMany answers what Running and LastAttempt answer ticket by
// ticket, in refs' order, across batch boundaries, in one round trip per
// runstate.ManyBatch tickets.
func TestInspectManyMatchesPerTicketReads(t *testing.T) {
	rdb := client(t)
	ctx := t.Context()
	n := 2*runstate.ManyBatch + 37
	refs := make([]platforms.Ref, n)
	for i := range refs {
		refs[i] = ref(fmt.Sprint(i))
		switch i % 4 {
		case 0: // running, attempt 1..3
			take(t, rdb, fmt.Sprint(i), fmt.Sprint("tok", i), 1+i%3, time.Hour, time.Now(), nil)
		case 1: // ran attempt 2, heartbeat gone (a dead run)
			take(t, rdb, fmt.Sprint(i), fmt.Sprint("tok", i), 2, time.Hour, time.Now(), nil)
			if ok, err := runstate.Evict(ctx, rdb, refs[i], fmt.Sprint("tok", i)); err != nil || !ok {
				t.Fatalf("evict %d: %v %v", i, ok, err)
			}
		case 2: // ran attempt 1, handed its outcome over: the record waits
			take(t, rdb, fmt.Sprint(i), fmt.Sprint("tok", i), 1, time.Hour, time.Now(), nil)
			o := runstate.Outcome{Ref: refs[i], Token: fmt.Sprint("tok", i), Attempt: 1, To: "done"}
			if ok, err := runstate.PutOutcome(ctx, rdb, o.Token, o); err != nil || !ok {
				t.Fatalf("record %d: %v %v", i, ok, err)
			}
			if _, err := runstate.Release(ctx, rdb, refs[i], o.Token, false); err != nil {
				t.Fatal(err)
			}
		} // 3: never ran
	}
	rt := redistest.CountRoundTrips(rdb)
	seen, err := runstate.InspectMany(ctx, rdb, refs)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rt.N(), int64((n+runstate.ManyBatch-1)/runstate.ManyBatch); got != want {
		t.Errorf("InspectMany of %d tickets took %d round trips, want %d", n, got, want)
	}
	if len(seen) != n {
		t.Fatalf("%d answers for %d tickets", len(seen), n)
	}
	for i, r := range refs {
		running, err := runstate.Running(ctx, rdb, r)
		if err != nil {
			t.Fatal(err)
		}
		last, err := runstate.LastAttempt(ctx, rdb, r)
		if err != nil {
			t.Fatal(err)
		}
		if seen[i] != (runstate.Seen{Running: running, LastAttempt: last}) {
			t.Fatalf("ticket %d: InspectMany %+v, per-ticket reads running=%v last=%d", i, seen[i], running, last)
		}
	}
	// The fixture really mixes the cases.
	if !seen[0].Running || seen[1].Running || seen[1].LastAttempt != 2 || !seen[2].Running || seen[3].Running || seen[3].LastAttempt != 0 {
		t.Errorf("fixture: %+v %+v %+v %+v", seen[0], seen[1], seen[2], seen[3])
	}
	rt.Reset()
	if seen, err := runstate.InspectMany(ctx, rdb, nil); err != nil || len(seen) != 0 || rt.N() != 0 {
		t.Errorf("no tickets: %v %v, %d round trips; want nothing sent", seen, err, rt.N())
	}
}

// A run that reset its attempt count before a stage's label write and died
// before that write leaves its ticket in the stage that ran, without a
// count: the slow cycle's InspectMany continues from the run's in-flight
// record, as the fast cycle does, not from attempt 1. The reset is the
// run's own: another token's writes nothing.
func TestInspectManyReadsTheAttemptOfAResetRun(t *testing.T) {
	rdb := client(t)
	ctx := t.Context()
	r := ref("reset")
	take(t, rdb, "reset", "tok", 2, time.Hour, time.Now(), nil)
	if ok, err := runstate.ResetAttempts(ctx, rdb, r, "other"); err != nil || ok {
		t.Fatalf("reset by another token: %v %v, want refused", ok, err)
	}
	if last, err := runstate.LastAttempt(ctx, rdb, r); err != nil || last != 2 {
		t.Fatalf("count %d %v after another token's reset, want 2", last, err)
	}
	if ok, err := runstate.ResetAttempts(ctx, rdb, r, "tok"); err != nil || !ok {
		t.Fatalf("reset by the run: %v %v", ok, err)
	}
	if last, err := runstate.LastAttempt(ctx, rdb, r); err != nil || last != 0 {
		t.Fatalf("count %d %v after the run's reset, want none", last, err)
	}
	if ok, err := runstate.Evict(ctx, rdb, r, "tok"); err != nil || !ok {
		t.Fatalf("evict: %v %v", ok, err)
	}
	seen, err := runstate.InspectMany(ctx, rdb, []platforms.Ref{r})
	if err != nil {
		t.Fatal(err)
	}
	if seen[0] != (runstate.Seen{LastAttempt: 2}) {
		t.Errorf("InspectMany %+v, want not running at attempt 2 (the in-flight record's)", seen[0])
	}
}
