package queue_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// Count covers every level and the delayed set; the oldest entry is found
// among the levels' heads and the delayed entries by the caller's clock.
func TestCountCoversEveryLevelAndTheDelayedSet(t *testing.T) {
	t.Parallel()
	q, _ := newLevelled(t, 0)
	ctx := t.Context()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(p []byte) (time.Time, bool) {
		var e struct{ At int64 }
		if json.Unmarshal(p, &e) != nil || e.At == 0 {
			return time.Time{}, false
		}
		return time.Unix(e.At, 0), true
	}
	mk := func(id string, prio int, age time.Duration) []byte {
		return fmt.Appendf(nil, `{"id":%q,"priority":%d,"at":%d}`, id, prio, now.Add(-age).Unix())
	}
	c, err := q.Count(ctx, at)
	if err != nil || c.Waiting() != 0 || c.Delayed != 0 || c.Oldest != nil || len(c.Levels) != 3 {
		t.Fatalf("empty queue: %+v %v", c, err)
	}
	for _, e := range [][]byte{mk("d1", 5, time.Second), mk("d2", 5, time.Hour), mk("h1", 1, time.Minute), mk("l1", 10, 2*time.Minute),
		[]byte(`{"id":"no time","priority":10}`)} {
		if err := q.Push(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	c, err = q.Count(ctx, at)
	if err != nil {
		t.Fatal(err)
	}
	// d2 waited an hour but is behind d1: the levels' heads are compared.
	if c.Waiting() != 5 || c.Levels[0].Len != 1 || c.Levels[1].Len != 2 || c.Levels[2].Len != 2 || string(c.Oldest) != string(mk("l1", 10, 2*time.Minute)) {
		t.Errorf("levels: %+v oldest %s", c.Levels, c.Oldest)
	}
	if err := q.Delay(ctx, mk("late", 1, -time.Hour), time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := q.Delay(ctx, mk("limited", 1, 3*time.Minute), time.Second); err != nil {
		t.Fatal(err)
	}
	c, err = q.Count(ctx, at)
	if err != nil || c.Delayed != 2 || c.Waiting() != 5 || string(c.Oldest) != string(mk("limited", 1, 3*time.Minute)) ||
		!c.OldestAt.Equal(now.Add(-3*time.Minute)) {
		t.Errorf("with the delayed set: delayed %d waiting %d oldest %s at %v (%v)", c.Delayed, c.Waiting(), c.Oldest, c.OldestAt, err)
	}
}
