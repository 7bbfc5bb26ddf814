package queue_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
)

// Priorities as the daemon configures them: 1 high, 5 default, 10 low.
func newLevelled(t testing.TB, lowerEvery int) (*queue.Queue, *redis.Client) {
	t.Helper()
	rdb := redistest.Start(t).Client(t)
	return queue.NewWith(rdb, keys.Queue(), queue.Options{
		DefaultPriority: 5,
		Levels:          []queue.Level{{Priority: 10, Key: keys.QueueLevel(10)}, {Priority: 1, Key: keys.QueueLevel(1)}},
		DelayedKey:      keys.Delayed(),
		LowerEvery:      lowerEvery,
	}), rdb
}

func entry(id string, priority int) string {
	return fmt.Sprintf(`{"id":%q,"priority":%d}`, id, priority)
}

func TestLevelsAndLists(t *testing.T) {
	t.Parallel()
	q, _ := newLevelled(t, 0)
	want := []string{keys.QueueLevel(1), keys.Queue(), keys.QueueLevel(10)}
	if got := q.Lists(); !slices.Equal(got, want) {
		t.Fatalf("Lists = %q, want %q", got, want)
	}
}

func TestPushPlacesByPriority(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, rdb := newLevelled(t, 0)
	push(t, q, entry("a", 10), entry("b", 1), entry("c", 5), `{"id":"d"}`, entry("e", 7), "not json")
	for key, want := range map[string][]string{
		keys.QueueLevel(1):  {entry("b", 1)},
		keys.Queue():        {entry("c", 5), `{"id":"d"}`, entry("e", 7), "not json"},
		keys.QueueLevel(10): {entry("a", 10)},
	} {
		if got, _ := rdb.LRange(ctx, key, 0, -1).Result(); !slices.Equal(got, want) {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	if n, err := q.Len(ctx); err != nil || n != 6 {
		t.Errorf("Len = %d, %v; want 6 across the levels", n, err)
	}
	all, _ := q.Entries(ctx)
	if len(all) != 6 || string(all[0]) != entry("b", 1) || string(all[5]) != entry("a", 10) {
		t.Errorf("Entries = %q, want every level, highest first", strs(all))
	}
}

func TestTakeServesHigherPriorityFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, _ := newLevelled(t, 1000)
	proc := keys.Processing("i1")
	push(t, q, entry("low", 10), entry("normal", 5), entry("high", 1), entry("high2", 1))
	var got []string
	for range 4 {
		b, err := q.Take(ctx, proc, time.Second)
		if err != nil || b == nil {
			t.Fatalf("Take = %q, %v", b, err)
		}
		got = append(got, string(b))
	}
	want := []string{entry("high", 1), entry("high2", 1), entry("normal", 5), entry("low", 10)}
	if !slices.Equal(got, want) {
		t.Fatalf("took %q, want %q", got, want)
	}
	if inflight, _ := q.ProcessingEntries(ctx, proc); len(inflight) != 4 {
		t.Fatalf("processing list holds %d entries, want the 4 taken", len(inflight))
	}
}

// A flood of high-priority requests does not starve the lower levels: with
// LowerEvery k and 3 levels, each lower-level entry is taken within
// k × (levels − 1) takes of the one before it. Counted in takes, not time.
func TestNoStarvationUnderHighPriorityFlood(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const k, levels, flood, lows, normals = 10, 3, 2000, 20, 20
	q, rdb := newLevelled(t, k)
	proc := keys.Processing("i1")
	pipe := rdb.Pipeline()
	for i := range flood {
		pipe.RPush(ctx, keys.QueueLevel(1), entry(fmt.Sprintf("h%d", i), 1))
	}
	for i := range lows {
		pipe.RPush(ctx, keys.QueueLevel(10), entry(fmt.Sprintf("l%d", i), 10))
	}
	for i := range normals {
		pipe.RPush(ctx, keys.Queue(), entry(fmt.Sprintf("n%d", i), 5))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	bound := k * (levels - 1)
	lastLow, lastNormal, worstLow, worstNormal := 0, 0, 0, 0
	seenLow, seenNormal := 0, 0
	for take := 1; seenLow < lows || seenNormal < normals; take++ {
		if take > flood {
			t.Fatalf("after %d takes only %d low and %d normal entries were served", take, seenLow, seenNormal)
		}
		b, err := q.Take(ctx, proc, 0)
		if err != nil || b == nil {
			t.Fatalf("take %d = %q, %v", take, b, err)
		}
		switch s := string(b); {
		case s[7] == 'l':
			worstLow, lastLow = max(worstLow, take-lastLow), take
			seenLow++
		case s[7] == 'n':
			worstNormal, lastNormal = max(worstNormal, take-lastNormal), take
			seenNormal++
		}
		_ = q.Ack(ctx, proc, b)
	}
	t.Logf("under a flood of %d high-priority entries: worst gap between low-priority takes %d, between normal takes %d (bound %d)",
		flood, worstLow, worstNormal, bound)
	if worstLow > bound || worstNormal > bound {
		t.Fatalf("starvation: a lower level waited %d/%d takes, bound %d", worstLow, worstNormal, bound)
	}
}

func TestRequeueReturnsEntriesToTheirLevel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, rdb := newLevelled(t, 1000)
	proc := keys.Processing("dead")
	push(t, q, entry("h1", 1), entry("n1", 5), entry("l1", 10), entry("h2", 1))
	for range 3 {
		if _, err := q.Take(ctx, proc, 0); err != nil {
			t.Fatal(err)
		}
	}
	n, err := q.Requeue(ctx, proc)
	if err != nil || n != 3 {
		t.Fatalf("Requeue = %d, %v; want 3", n, err)
	}
	if got, _ := rdb.LRange(ctx, keys.QueueLevel(1), 0, -1).Result(); !slices.Equal(got, []string{entry("h1", 1), entry("h2", 1)}) {
		t.Errorf("high level = %q, want h1 back at the head", got)
	}
	if got, _ := rdb.LRange(ctx, keys.Queue(), 0, -1).Result(); !slices.Equal(got, []string{entry("n1", 5)}) {
		t.Errorf("default level = %q", got)
	}
	if got, _ := rdb.LRange(ctx, keys.QueueLevel(10), 0, -1).Result(); !slices.Equal(got, []string{entry("l1", 10)}) {
		t.Errorf("low level = %q", got)
	}
}

func TestDelayedEntriesJoinTheirLevelWhenDue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, rdb := newLevelled(t, 0)
	before := time.Now().Truncate(time.Millisecond)
	for i, e := range []string{entry("late", 1), entry("due-high", 1), entry("due-low", 10), entry("due-default", 5)} {
		wait := -time.Duration(i) * time.Second
		if e == entry("late", 1) {
			wait = time.Minute
		}
		if err := q.Delay(ctx, []byte(e), wait); err != nil {
			t.Fatal(err)
		}
	}
	after := time.Now()
	if n, err := q.PromoteDue(ctx, 2); err != nil || n != 2 {
		t.Fatalf("PromoteDue(limit 2) = %d, %v", n, err)
	}
	if n, err := q.PromoteDue(ctx, 100); err != nil || n != 1 {
		t.Fatalf("second PromoteDue = %d, %v; want the last due entry", n, err)
	}
	for key, want := range map[string][]string{
		keys.QueueLevel(1):  {entry("due-high", 1)},
		keys.Queue():        {entry("due-default", 5)},
		keys.QueueLevel(10): {entry("due-low", 10)},
	} {
		if got, _ := rdb.LRange(ctx, key, 0, -1).Result(); !slices.Equal(got, want) {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	left, err := q.DelayedEntries(ctx)
	// The redis-server under test shares this machine's clock.
	if err != nil || len(left) != 1 || string(left[0].Payload) != entry("late", 1) ||
		left[0].Due.Before(before.Add(time.Minute)) || left[0].Due.After(after.Add(time.Minute)) {
		t.Fatalf("DelayedEntries = %+v, %v; want only the late entry", left, err)
	}
}

// Concurrent promoters (a leader and its successor overlapping) never move
// an entry twice.
func TestConcurrentPromotersMoveEachOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, _ := newLevelled(t, 0)
	const n = 500
	for i := range n {
		if err := q.Delay(ctx, []byte(entry(fmt.Sprint(i), 1+9*(i%2))), -time.Second); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				m, err := q.PromoteDue(ctx, 7)
				if err != nil || m == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	all, _ := q.Entries(ctx)
	seen := map[string]bool{}
	for _, e := range all {
		if seen[string(e)] {
			t.Fatalf("%s promoted twice", e)
		}
		seen[string(e)] = true
	}
	if len(seen) != n {
		t.Fatalf("%d entries promoted, want %d", len(seen), n)
	}
}

// BenchmarkTakeWithPriorities is take throughput on a 3-level queue with
// the high level flooded (the anti-starvation rotation in play):
// go test -run '^$' -bench TakeWithPriorities ./pkg/queue
func BenchmarkTakeWithPriorities(b *testing.B) {
	ctx := context.Background()
	q, rdb := newLevelled(b, queue.DefaultLowerEvery)
	proc := keys.Processing("bench")
	fill := func(n int) {
		pipe := rdb.Pipeline()
		for i := range n {
			p := []int{1, 1, 1, 5, 10}[i%5]
			pipe.RPush(ctx, map[int]string{1: keys.QueueLevel(1), 5: keys.Queue(), 10: keys.QueueLevel(10)}[p], entry(fmt.Sprint(i), p))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	fill(b.N)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		got, err := q.Take(ctx, proc, time.Second)
		if err != nil || got == nil {
			b.Fatalf("Take = %q, %v", got, err)
		}
		if err := q.Ack(ctx, proc, got); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "takes/s")
}

// BenchmarkTakeSingleLevel is BenchmarkTakeWithPriorities's baseline: the
// same take + ack on a queue with one level (BLMOVE).
func BenchmarkTakeSingleLevel(b *testing.B) {
	ctx := context.Background()
	q, rdb := newQueue(b)
	proc := keys.Processing("bench")
	pipe := rdb.Pipeline()
	for i := range b.N {
		pipe.RPush(ctx, keys.Queue(), entry(fmt.Sprint(i), 5))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		got, err := q.Take(ctx, proc, time.Second)
		if err != nil || got == nil {
			b.Fatalf("Take = %q, %v", got, err)
		}
		if err := q.Ack(ctx, proc, got); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "takes/s")
}
