package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// errNoDelayed is returned by the delayed-set methods of a queue built
// without Options.DelayedKey.
var errNoDelayed = errors.New("queue has no delayed set")

// DelayedEntry is an entry waiting in the delayed set.
type DelayedEntry struct {
	Payload []byte
	Due     time.Time
}

// Delay puts payload in the delayed set, to join its level's tail at due
// (once PromoteDue runs at or after due). The entry is in Redis from this
// call on, so a consumer that delays and then crashes loses nothing.
func (q *Queue) Delay(ctx context.Context, payload []byte, due time.Time) error {
	if q.delayed == "" {
		return errNoDelayed
	}
	if err := q.rdb.ZAdd(ctx, q.delayed, redis.Z{Score: float64(due.UnixMilli()), Member: payload}).Err(); err != nil {
		return fmt.Errorf("queue delay %s: %w", q.delayed, err)
	}
	return nil
}

// PromoteDue moves up to limit entries whose due time is at or before now
// from the delayed set to the tail of their levels, in one atomic script
// (an entry is always in exactly one place), oldest due first, and returns
// how many it moved.
func (q *Queue) PromoteDue(ctx context.Context, now time.Time, limit int) (int, error) {
	if q.delayed == "" {
		return 0, errNoDelayed
	}
	args := append([]any{now.UnixMilli(), max(limit, 1)}, q.placeArgs...)
	n, err := promoteScript.Run(ctx, q.rdb, append([]string{q.delayed}, q.placeKeys...), args...).Int()
	if err != nil {
		return 0, fmt.Errorf("queue promote %s: %w", q.delayed, err)
	}
	return n, nil
}

// DelayedEntries returns the delayed set, earliest due first.
func (q *Queue) DelayedEntries(ctx context.Context) ([]DelayedEntry, error) {
	if q.delayed == "" {
		return nil, nil
	}
	zs, err := q.rdb.ZRangeWithScores(ctx, q.delayed, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("queue delayed %s: %w", q.delayed, err)
	}
	out := make([]DelayedEntry, len(zs))
	for i, z := range zs {
		s, _ := z.Member.(string)
		out[i] = DelayedEntry{Payload: []byte(s), Due: time.UnixMilli(int64(z.Score))}
	}
	return out, nil
}
