package runstate_test

import (
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// A stage's send-backs are counted per ticket and stage up to max, only by
// the run holding the ticket, with the counts' TTL renewed; a fresh
// trigger's ForgetSentBack makes max whole again.
func TestCountSendBack(t *testing.T) {
	rdb := client(t)
	ctx := t.Context()
	now := time.UnixMilli(1_800_000_000_000)
	if res, _ := take(t, rdb, "1", "tok", 1, time.Minute, now, nil); res != runstate.Taken {
		t.Fatalf("take %v", res)
	}
	r := ref("1")
	for want := 1; want <= 2; want++ {
		got, n, err := runstate.CountSendBack(ctx, rdb, r, "tok", "test", 2)
		if err != nil || got != runstate.SentBackCounted || n != want {
			t.Fatalf("send-back %d: %v %d %v, want counted %d", want, got, n, err, want)
		}
	}
	if got, n, err := runstate.CountSendBack(ctx, rdb, r, "tok", "test", 2); err != nil || got != runstate.SentBackUsedUp || n != 2 {
		t.Fatalf("third send-back with max 2: %v %d %v, want used up at 2", got, n, err)
	}
	// Another stage of the same ticket counts on its own.
	if got, n, err := runstate.CountSendBack(ctx, rdb, r, "tok", "review", 2); err != nil || got != runstate.SentBackCounted || n != 1 {
		t.Fatalf("review's first send-back: %v %d %v", got, n, err)
	}
	// A run that does not hold the ticket counts nothing.
	if got, _, err := runstate.CountSendBack(ctx, rdb, r, "other", "review", 2); err != nil || got != runstate.SentBackLost {
		t.Fatalf("send-back by a run without the lock: %v %v, want lost", got, err)
	}
	if counts, err := runstate.SentBackCounts(ctx, rdb, r); err != nil || counts["test"] != 2 || counts["review"] != 1 {
		t.Fatalf("counts %v %v, want test 2 and review 1", counts, err)
	}
	if ttl := rdb.PTTL(ctx, keys.SentBack(r.Key())).Val(); ttl <= 0 || ttl > keys.SentBackTTL {
		t.Errorf("counts' TTL %v, want within %v", ttl, keys.SentBackTTL)
	}
	if err := runstate.ForgetSentBack(ctx, rdb, r); err != nil {
		t.Fatal(err)
	}
	if got, n, err := runstate.CountSendBack(ctx, rdb, r, "tok", "test", 2); err != nil || got != runstate.SentBackCounted || n != 1 {
		t.Fatalf("send-back after ForgetSentBack: %v %d %v, want counted 1", got, n, err)
	}
}

// ForgetGateDecision drops a recorded gate decision only for the run that
// holds the ticket.
func TestForgetGateDecision(t *testing.T) {
	rdb := client(t)
	ctx := t.Context()
	now := time.UnixMilli(1_800_000_000_000)
	if res, _ := take(t, rdb, "1", "tok", 1, time.Minute, now, nil); res != runstate.Taken {
		t.Fatalf("take %v", res)
	}
	r := ref("1")
	k := keys.GateDecision(r.Key())
	if err := rdb.Set(ctx, k, `{"kind":"approve","stage":"implement"}`, keys.GateTTL).Err(); err != nil {
		t.Fatal(err)
	}
	if held, err := runstate.ForgetGateDecision(ctx, rdb, r, "other"); err != nil || held {
		t.Fatalf("forget by a run without the lock: %v %v, want not held", held, err)
	}
	if n, _ := rdb.Exists(ctx, k).Result(); n != 1 {
		t.Fatal("a run without the lock dropped the record")
	}
	if held, err := runstate.ForgetGateDecision(ctx, rdb, r, "tok"); err != nil || !held {
		t.Fatalf("forget by the run: %v %v", held, err)
	}
	if n, _ := rdb.Exists(ctx, k).Result(); n != 0 {
		t.Error("record kept after the run's forget")
	}
}
