package budget

import (
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
)

// Answers from several replicas arrive out of order: within one reset
// window the lower remaining wins, a later window replaces it, an earlier
// one is ignored, and the later hold wins. The key expires with the window.
func TestStoreMergesAnswersFromReplicas(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	rdb := redistest.Start(t).Client(t)
	b := New(rdb, func() time.Time { return now })
	ctx := t.Context()
	reset := now.Add(time.Hour)
	store := func(q trackerhttp.Quota) {
		t.Helper()
		if err := b.Store(ctx, "k", q); err != nil {
			t.Fatal(err)
		}
	}
	load := func() trackerhttp.Quota {
		t.Helper()
		q, err := b.Load(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	store(trackerhttp.Quota{Remaining: 10, Limit: 5000, Reset: reset})
	store(trackerhttp.Quota{Remaining: 12, Limit: -1, Reset: reset}) // an older answer of the same window
	if q := load(); q.Remaining != 10 || q.Limit != 5000 || !q.Reset.Equal(reset) {
		t.Errorf("same window: %+v, want remaining 10 (the lower), limit 5000, reset %v", q, reset)
	}
	store(trackerhttp.Quota{Remaining: 4999, Limit: 5000, Reset: reset.Add(time.Hour)})
	store(trackerhttp.Quota{Remaining: 3, Limit: 5000, Reset: reset}) // the old window, late
	if q := load(); q.Remaining != 4999 || !q.Reset.Equal(reset.Add(time.Hour)) {
		t.Errorf("new window: %+v, want remaining 4999 until %v", q, reset.Add(time.Hour))
	}
	hold := now.Add(2 * time.Minute)
	store(trackerhttp.Quota{Remaining: -1, Limit: -1, Hold: hold})
	store(trackerhttp.Quota{Remaining: -1, Limit: -1, Hold: now.Add(time.Minute)})
	if q := load(); !q.Hold.Equal(hold) || q.Remaining != 4999 {
		t.Errorf("holds: %+v, want the later hold %v and remaining kept", q, hold)
	}
	ttl, err := rdb.PTTL(ctx, keys.RateBudget("k")).Result()
	if err != nil || ttl <= 0 {
		t.Errorf("budget key TTL %v (%v), want it to expire", ttl, err)
	}
	if q, err := b.Load(ctx, "unknown"); err != nil || q.Remaining != -1 || !q.Hold.IsZero() {
		t.Errorf("unknown key: %+v %v, want nothing known", q, err)
	}
}

// Take admits cost while every window has room and otherwise says how long
// until the oldest entries leave the window that is full, recording
// nothing: 80 a minute then waits for the minute; 500 an hour then waits
// for the hour's first entry to leave it.
func TestTakePacesSlidingWindows(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	b := New(rdb, time.Now) // a clock given: Take dates entries by its now
	ctx := t.Context()
	windows := []trackerhttp.Window{{Max: 80, Per: time.Minute}, {Max: 500, Per: time.Hour}}
	start := time.Unix(1_700_000_000, 0)
	now := start
	took := 0
	for took < 500 {
		wait, err := b.Take(ctx, "k", 1, windows, now)
		if err != nil {
			t.Fatal(err)
		}
		if wait > 0 {
			if took%80 != 0 || wait > time.Minute {
				t.Fatalf("after %d: wait %v, want a minute's wait after each 80", took, wait)
			}
			now = now.Add(wait)
			continue
		}
		took++
		now = now.Add(10 * time.Millisecond)
	}
	wait, err := b.Take(ctx, "k", 1, windows, now)
	if err != nil {
		t.Fatal(err)
	}
	if want := start.Add(time.Hour).Sub(now); wait != want {
		t.Errorf("501st in the hour: wait %v, want %v (until the first entry leaves the hour)", wait, want)
	}
	if wait, _ := b.Take(ctx, "k", 1, windows, now.Add(wait)); wait != 0 {
		t.Errorf("after the wait: %v, want room", wait)
	}
	if wait, _ := b.Take(ctx, "other", 5, windows, now); wait != 0 {
		t.Errorf("another key: wait %v, want its own room", wait)
	}
}

// Replicas whose clocks disagree pace in one window: with no clock given,
// entries are dated by Redis's TIME, so a replica ten minutes ahead does
// not take the others' entries for old ones and fill the minute again.
func TestTakeUsesRedisTime(t *testing.T) {
	t.Parallel()
	b := New(redistest.Start(t).Client(t), nil)
	ctx := t.Context()
	windows := []trackerhttp.Window{{Max: 80, Per: time.Minute}}
	for i := range 80 {
		if wait, err := b.Take(ctx, "k", 1, windows, time.Now()); err != nil || wait != 0 {
			t.Fatalf("take %d: wait %v, err %v", i, wait, err)
		}
	}
	wait, err := b.Take(ctx, "k", 1, windows, time.Now().Add(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if wait <= 0 || wait > time.Minute {
		t.Errorf("the 81st take of the minute from a replica 10 minutes ahead: wait %v, want up to a minute", wait)
	}
}
