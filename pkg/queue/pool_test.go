package queue_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
)

// newPooled is the daemon's layout with pools: the default pool on the
// specification's keys, pool gpu on its own, each with levels 1, 5
// (default) and 10.
func newPooled(t testing.TB) (*queue.Queue, *redis.Client) {
	t.Helper()
	rdb := redistest.Start(t).Client(t)
	levels := func(pool string) []queue.Level {
		if pool == "default" {
			return []queue.Level{{Priority: 1, Key: keys.QueueLevel(1)}, {Priority: 10, Key: keys.QueueLevel(10)}}
		}
		return []queue.Level{{Priority: 1, Key: keys.PoolQueueLevel(pool, 1)}, {Priority: 10, Key: keys.PoolQueueLevel(pool, 10)}}
	}
	return queue.NewWith(rdb, keys.Queue(), queue.Options{
		DefaultPriority: 5, Levels: levels("default"), DelayedKey: keys.Delayed(), DefaultPool: "default",
		Pools: []queue.Pool{{Name: "gpu", Key: keys.PoolQueue("gpu"), Levels: levels("gpu")}},
	}), rdb
}

func pooled(id, pool string, priority int) string {
	return fmt.Sprintf(`{"id":%q,"pool":%q,"priority":%d}`, id, pool, priority)
}

func wantLists(t *testing.T, rdb *redis.Client, want map[string][]string) {
	t.Helper()
	for key, w := range want {
		if got, _ := rdb.LRange(t.Context(), key, 0, -1).Result(); !slices.Equal(got, w) {
			t.Errorf("%s = %q, want %q", key, got, w)
		}
	}
}

// Push places an entry in its pool's level; an absent pool is the default
// pool's, and an unknown one waits in the delayed set (never in another
// pool's list).
func TestPushPlacesByPool(t *testing.T) {
	t.Parallel()
	q, rdb := newPooled(t)
	push(t, q, pooled("a", "gpu", 1), pooled("b", "gpu", 5), pooled("c", "gpu", 7), pooled("d", "default", 1),
		pooled("e", "nope", 10), `{"id":"f"}`)
	wantLists(t, rdb, map[string][]string{
		keys.PoolQueueLevel("gpu", 1): {pooled("a", "gpu", 1)},
		keys.PoolQueue("gpu"):         {pooled("b", "gpu", 5), pooled("c", "gpu", 7)},
		keys.QueueLevel(1):            {pooled("d", "default", 1)},
		keys.QueueLevel(10):           nil,
		keys.Queue():                  {`{"id":"f"}`},
	})
	if n, err := q.Len(t.Context()); err != nil || n != 5 {
		t.Errorf("Len = %d, %v; want 5 across every pool", n, err)
	}
	if d, _ := rdb.ZRange(t.Context(), keys.Delayed(), 0, -1).Result(); !slices.Equal(d, []string{pooled("e", "nope", 10)}) || q.Unplaced() != 1 {
		t.Errorf("delayed = %q, Unplaced = %d; want the unknown pool's entry, 1", d, q.Unplaced())
	}
	if got := q.Pools(); !slices.Equal(got, []string{"default", "gpu"}) {
		t.Errorf("Pools = %q", got)
	}
}

// A consumer serving only the default pool never takes a gpu entry, one
// serving gpu takes it, and one serving both takes by priority across them.
func TestTakeServesOnlyItsPools(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	q, _ := newPooled(t)
	push(t, q, pooled("g", "gpu", 5))
	if b, err := q.Serving("default").Take(ctx, keys.Processing("d"), 300*time.Millisecond); err != nil || b != nil {
		t.Fatalf("default-only Take = %q, %v; want nothing", b, err)
	}
	b, err := q.Serving("gpu").Take(ctx, keys.Processing("g"), time.Second)
	if err != nil || string(b) != pooled("g", "gpu", 5) {
		t.Fatalf("gpu Take = %q, %v", b, err)
	}
	push(t, q, pooled("low", "default", 10), pooled("high", "gpu", 1), pooled("mid", "default", 5))
	both := q.Serving("default", "gpu")
	var got []string
	for range 3 {
		b, err := both.Take(ctx, keys.Processing("b"), time.Second)
		if err != nil || b == nil {
			t.Fatalf("Take = %q, %v", b, err)
		}
		got = append(got, string(b))
	}
	if want := []string{pooled("high", "gpu", 1), pooled("mid", "default", 5), pooled("low", "default", 10)}; !slices.Equal(got, want) {
		t.Fatalf("took %q, want %q", got, want)
	}
}

// An idle single-pool consumer wakes on a push to its pool's list.
func TestTakeWaitsOnItsPool(t *testing.T) {
	t.Parallel()
	q, _ := newPooled(t)
	gpu := q.Serving("gpu")
	got := make(chan []byte, 1)
	go func() {
		b, _ := gpu.Take(t.Context(), keys.Processing("g"), 5*time.Second)
		got <- b
	}()
	push(t, q, pooled("g", "gpu", 5))
	if b := <-got; string(b) != pooled("g", "gpu", 5) {
		t.Fatalf("Take = %q", b)
	}
	if b, err := q.Serving("nope").Take(t.Context(), keys.Processing("n"), 50*time.Millisecond); b != nil || err != nil {
		t.Fatalf("a handle serving no pool the queue holds took %q, %v", b, err)
	}
}

// Requeue and PromoteDue, the repairs of a crash and of a retry's backoff,
// keep an entry in its pool.
func TestRepairsKeepThePool(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	q, rdb := newPooled(t)
	push(t, q, pooled("r", "gpu", 10), pooled("s", "default", 5))
	gpu := q.Serving("gpu", "default")
	for range 2 {
		if b, err := gpu.Take(ctx, keys.Processing("dead"), time.Second); err != nil || b == nil {
			t.Fatalf("Take = %q, %v", b, err)
		}
	}
	if n, err := q.Requeue(ctx, keys.Processing("dead")); err != nil || n != 2 {
		t.Fatalf("Requeue = %d, %v", n, err)
	}
	if err := q.Delay(ctx, []byte(pooled("d", "gpu", 1)), -time.Second); err != nil {
		t.Fatal(err)
	}
	if n, err := q.PromoteDue(ctx, 10); err != nil || n != 1 {
		t.Fatalf("PromoteDue = %d, %v", n, err)
	}
	wantLists(t, rdb, map[string][]string{
		keys.PoolQueueLevel("gpu", 10): {pooled("r", "gpu", 10)},
		keys.PoolQueueLevel("gpu", 1):  {pooled("d", "gpu", 1)},
		keys.Queue():                   {pooled("s", "default", 5)},
	})
	c, err := q.Count(ctx, func([]byte) (time.Time, bool) { return time.Time{}, false })
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int64{}
	for _, l := range c.Levels {
		per[l.Pool] += l.Len
	}
	if per["gpu"] != 2 || per["default"] != 1 {
		t.Fatalf("Count per pool = %v", per)
	}
}

// A replica whose config lacks pool gpu (rolling deploy) promotes and
// requeues a gpu request: it stays in the delayed set, due
// UnknownPoolWait later, never in the default pool's list, and a replica
// that holds gpu promotes it into gpu's list.
func TestUnknownPoolStaysDelayed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	withGPU, rdb := newPooled(t)
	without := queue.NewWith(rdb, keys.Queue(), queue.Options{DefaultPriority: 5, DelayedKey: keys.Delayed(), DefaultPool: "default"})
	retry, taken := pooled("r", "gpu", 5), pooled("t", "gpu", 5)
	if err := withGPU.Delay(ctx, []byte(retry), 0); err != nil {
		t.Fatal(err)
	}
	if err := rdb.RPush(ctx, keys.Processing("dead"), taken).Err(); err != nil {
		t.Fatal(err)
	}
	before, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	before = before.Truncate(time.Millisecond) // the scripts read TIME in whole ms
	if n, err := without.PromoteDue(ctx, 10); err != nil || n != 0 {
		t.Errorf("PromoteDue without gpu = %d, %v; want 0", n, err)
	}
	if n, err := without.Requeue(ctx, keys.Processing("dead")); err != nil || n != 1 {
		t.Errorf("Requeue without gpu = %d, %v; want 1", n, err)
	}
	if got := without.Serving("default").Unplaced(); got != 2 {
		t.Errorf("Unplaced = %d, want 2", got)
	}
	if err := without.Push(ctx, []byte(pooled("p", "arm", 5))); err != nil {
		t.Fatal(err)
	}
	// By pool: what the daemon logs and exports (promote, requeue, push).
	if got := without.UnplacedByPool(); !maps.Equal(got, map[string]uint64{"gpu": 2, "arm": 1}) {
		t.Errorf("UnplacedByPool = %v, want gpu 2 and arm 1", got)
	}
	if err := rdb.ZRem(ctx, keys.Delayed(), pooled("p", "arm", 5)).Err(); err != nil {
		t.Fatal(err)
	}
	wantLists(t, rdb, map[string][]string{keys.Queue(): nil, keys.Processing("dead"): nil, keys.PoolQueue("gpu"): nil})
	d, err := without.DelayedEntries(ctx)
	if err != nil || len(d) != 2 {
		t.Fatalf("delayed = %v, %v; want both gpu entries", d, err)
	}
	for _, e := range d {
		if wait := e.Due.Sub(before); wait < queue.UnknownPoolWait || wait > queue.UnknownPoolWait+time.Minute {
			t.Errorf("%s due %v after Redis's now, want about %v", e.Payload, wait, queue.UnknownPoolWait)
		}
	}
	if n, err := without.MakeDue(ctx, [][]byte{[]byte(retry), []byte(taken)}); err != nil || n != 2 {
		t.Fatalf("MakeDue = %d, %v", n, err)
	}
	if n, err := withGPU.PromoteDue(ctx, 10); err != nil || n != 2 {
		t.Fatalf("PromoteDue with gpu = %d, %v; want 2", n, err)
	}
	got, _ := rdb.LRange(ctx, keys.PoolQueue("gpu"), 0, -1).Result()
	if slices.Sort(got); !slices.Equal(got, []string{retry, taken}) {
		t.Errorf("gpu list = %q, want both entries", got)
	}
	wantLists(t, rdb, map[string][]string{keys.Queue(): nil})
}
