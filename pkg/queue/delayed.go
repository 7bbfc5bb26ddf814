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
	// Due is by Redis's clock, which a replica's wall clock may differ from.
	Due time.Time
}

// Delay puts payload in the delayed set, to join its level's tail once
// wait has passed by Redis's clock (when PromoteDue next runs). The entry is
// in Redis from this call on, so a consumer that delays and then crashes
// loses nothing. A wait of zero or less makes it due at once.
func (q *Queue) Delay(ctx context.Context, payload []byte, wait time.Duration) error {
	if q.delayed == "" {
		return errNoDelayed
	}
	if err := delayScript.Run(ctx, q.rdb, []string{q.delayed}, wait.Milliseconds(), payload).Err(); err != nil {
		return fmt.Errorf("queue delay %s: %w", q.delayed, err)
	}
	return nil
}

// MakeDue makes the given entries of the delayed set due now, by Redis's
// clock; entries no longer in the set are left out, never added back. It
// returns how many entries it moved earlier.
func (q *Queue) MakeDue(ctx context.Context, payloads [][]byte) (int, error) {
	if q.delayed == "" {
		return 0, errNoDelayed
	}
	if len(payloads) == 0 {
		return 0, nil
	}
	return MakeDue(ctx, q.rdb, q.delayed, payloads)
}

// MakeDue is Queue.MakeDue for callers that hold only the delayed set's key.
func MakeDue(ctx context.Context, rdb redis.Scripter, delayedKey string, payloads [][]byte) (int, error) {
	args := make([]any, len(payloads))
	for i, p := range payloads {
		args[i] = p
	}
	n, err := makeDueScript.Run(ctx, rdb, []string{delayedKey}, args...).Int()
	if err != nil {
		return 0, fmt.Errorf("queue make due %s: %w", delayedKey, err)
	}
	return n, nil
}

// PromoteDue moves up to limit entries that are due by Redis's clock from
// the delayed set to the tail of their levels, in one atomic script (an
// entry is always in exactly one place), oldest due first, and returns how
// many it moved. A due entry naming a pool the queue does not hold stays in
// the set, due UnknownPoolWait later (Unplaced counts it), and is not
// counted as moved.
func (q *Queue) PromoteDue(ctx context.Context, limit int) (int, error) {
	if q.delayed == "" {
		return 0, errNoDelayed
	}
	args := append([]any{max(limit, 1), q.parkWait()}, q.placeArgs...)
	raw, err := promoteScript.Run(ctx, q.rdb, append([]string{q.delayed}, q.placeKeys...), args...).Slice()
	var moved int64
	if err == nil {
		moved, _, err = q.placed(raw)
	}
	if err != nil {
		return 0, fmt.Errorf("queue promote %s: %w", q.delayed, err)
	}
	return int(moved), nil
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
