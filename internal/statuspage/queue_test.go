package statuspage

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
)

// /status.json counts every priority level and the delayed set: a ticket
// waiting on a priority level is queued, and the oldest wait is found
// among every level's head and the delayed entries.
func TestStatusCountsEveryLevel(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	ctx := t.Context()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	push := func(key, id string, prio int, age time.Duration) {
		req := lifecycle.PipelineRequest{ID: id, Ref: refFor("acme/app#" + id), Attempt: 1, EnqueuedAt: now.Add(-age), Priority: prio}
		if err := rdb.RPush(ctx, key, req.Encode()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	push(keys.Queue(), "1", 0, time.Second)
	push(keys.QueueLevel(1), "2", 1, 3*time.Minute)
	limited := lifecycle.PipelineRequest{ID: "3", Ref: refFor("acme/app#3"), Attempt: 1, EnqueuedAt: now.Add(-time.Hour)}
	if err := rdb.ZAdd(ctx, keys.Delayed(), redis.Z{Score: float64(now.Add(time.Second).UnixMilli()), Member: limited.Encode()}).Err(); err != nil {
		t.Fatal(err)
	}

	h := New(Config{RDB: rdb, Queue: testQueue(rdb, 1), Token: "s3cret", Clock: func() time.Time { return now }})
	var st Status
	if err := json.Unmarshal(get(t, h, "/status.json", "Bearer s3cret").Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if st.Queue.Depth != 2 || st.Queue.Delayed != 1 || st.Queue.Oldest != "github:acme/app#3" || st.Queue.OldestAgeMS != time.Hour.Milliseconds() {
		t.Errorf("queue = %+v, want depth 2 (both levels), delayed 1, oldest github:acme/app#3 an hour old", st.Queue)
	}
}

// testQueue is the queue with the default level, the given other levels
// and the delayed set, as projects.Queue builds it.
func testQueue(rdb redis.UniversalClient, levels ...int) *queue.Queue {
	o := queue.Options{DefaultPriority: lifecycle.DefaultPriority, DelayedKey: keys.Delayed()}
	for _, p := range levels {
		o.Levels = append(o.Levels, queue.Level{Priority: p, Key: keys.QueueLevel(p)})
	}
	return queue.NewWith(rdb, keys.Queue(), o)
}
