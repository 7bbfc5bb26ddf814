// Package queue owns the Redis list job queue with reliable take: producers
// RPUSH, consumers take from the head (FIFO) by atomically moving the entry
// into their own processing list, and acknowledge it once handled. An entry
// is therefore always in exactly one list, so a consumer that crashes
// between take and ack loses nothing: Requeue moves its processing list back
// to the head of the queue.
//
// The queue knows nothing of what the payloads mean; payloads are compared
// byte for byte by Ack, so each should be unique (carry a request id).
package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/redisconn"
)

// takeSlice bounds one blocking BLMOVE inside Take, so a cancelled context
// is noticed within takeSlice even though a blocking Redis command cannot be
// interrupted without dropping its connection (and perhaps its reply, and
// with it a taken entry). It must stay below the client's ReadTimeout
// (go-redis default 3s).
const takeSlice = 250 * time.Millisecond

// requeueScript moves every entry of a processing list back to the head of
// the queue, keeping their order: the oldest taken entry ends up first.
//
// KEYS[1] -> the processing list
// KEYS[2] -> the queue
//
// Returns the number of entries moved.
var requeueScript = redis.NewScript(`
local n = 0
while redis.call("LMOVE", KEYS[1], KEYS[2], "RIGHT", "LEFT") do
	n = n + 1
end
return n
`)

// Queue is a handle on one Redis list queue. It holds no state of its own;
// any number of Queues on the same key may be used concurrently.
type Queue struct {
	rdb redis.UniversalClient
	key string
}

// New returns the queue stored at key (keys.Queue()).
func New(rdb redis.UniversalClient, key string) *Queue {
	return &Queue{rdb: rdb, key: key}
}

// Push appends payload to the tail of the queue.
func (q *Queue) Push(ctx context.Context, payload []byte) error {
	if err := q.rdb.RPush(ctx, q.key, payload).Err(); err != nil {
		return fmt.Errorf("queue push %s: %w", q.key, err)
	}
	return nil
}

// Take atomically moves the head of the queue to the tail of processingKey
// (BLMOVE key processingKey LEFT RIGHT) and returns it, blocking up to wait
// for an entry; wait <= 0 does not block. It returns (nil, nil) when no
// entry came within wait, and ctx.Err() within a fraction of a second of
// ctx being cancelled. An entry taken in the same instant the context ends
// is still returned (with a nil error): it is in processingKey and the
// caller owns it.
func (q *Queue) Take(ctx context.Context, processingKey string, wait time.Duration) ([]byte, error) {
	deadline := time.Now().Add(wait)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		left := time.Until(deadline)
		var cmd *redis.Cmd
		if ms := min(left, takeSlice).Milliseconds(); ms < 1 {
			// Never BLMOVE with timeout 0: that blocks forever.
			cmd = q.rdb.Do(ctx, "lmove", q.key, processingKey, "LEFT", "RIGHT")
		} else {
			// BLMOVE takes fractional seconds; go-redis's BLMove would
			// round sub-second timeouts up to 1s.
			cmd = q.rdb.Do(ctx, "blmove", q.key, processingKey, "LEFT", "RIGHT",
				strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64))
		}
		s, err := cmd.Text()
		switch {
		case err == nil:
			return []byte(s), nil
		case !errors.Is(err, redis.Nil):
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("queue take %s: %w", q.key, err)
		case left <= takeSlice:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, nil
		}
	}
}

// Ack removes payload from processingKey once it has been handled. Acking an
// entry that is no longer there (requeued meanwhile) is not an error.
func (q *Queue) Ack(ctx context.Context, processingKey string, payload []byte) error {
	if err := q.rdb.LRem(ctx, processingKey, 1, payload).Err(); err != nil {
		return fmt.Errorf("queue ack %s: %w", processingKey, err)
	}
	return nil
}

// Requeue moves every entry of processingKey back to the head of the queue
// in one atomic step, preserving their order, and returns how many it moved.
// It is how a restarted consumer, or the repair of a dead one, gets taken
// but unacknowledged entries processed again.
func (q *Queue) Requeue(ctx context.Context, processingKey string) (int, error) {
	n, err := requeueScript.Run(ctx, q.rdb, []string{processingKey, q.key}).Int()
	if err != nil {
		return 0, fmt.Errorf("queue requeue %s: %w", processingKey, err)
	}
	return n, nil
}

// Len is the number of entries waiting in the queue (not those taken).
func (q *Queue) Len(ctx context.Context) (int64, error) {
	n, err := q.rdb.LLen(ctx, q.key).Result()
	if err != nil {
		return 0, fmt.Errorf("queue len %s: %w", q.key, err)
	}
	return n, nil
}

// Entries returns the waiting entries, head first.
func (q *Queue) Entries(ctx context.Context) ([][]byte, error) {
	return q.lrange(ctx, q.key)
}

// ProcessingKeys returns the processing lists matching pattern
// (keys.ProcessingPattern()), found with SCAN so a large keyspace is not
// blocked; on a cluster every master is scanned.
func (q *Queue) ProcessingKeys(ctx context.Context, pattern string) ([]string, error) {
	ks, err := redisconn.ScanKeys(ctx, q.rdb, pattern)
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	return ks, nil
}

// ProcessingEntries returns the entries of processingKey, oldest take first.
func (q *Queue) ProcessingEntries(ctx context.Context, processingKey string) ([][]byte, error) {
	return q.lrange(ctx, processingKey)
}

func (q *Queue) lrange(ctx context.Context, key string) ([][]byte, error) {
	vals, err := q.rdb.LRange(ctx, key, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("queue lrange %s: %w", key, err)
	}
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = []byte(v)
	}
	return out, nil
}
