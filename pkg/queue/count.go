package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// CountDelayedScan bounds how many delayed entries (earliest due first)
// Count reads to find the oldest wait, so a scrape stays cheap however
// large the delayed set grows.
const CountDelayedScan = 1000

// Count is what the queue holds at one moment, on every level and in the
// delayed set: what a gauge or an operator's view shows without reading
// every entry.
type Count struct {
	// Levels are the levels' lengths, highest priority first.
	Levels []LevelCount
	// Delayed is the size of the delayed set.
	Delayed int64
	// Oldest is the entry that has waited longest, by its enqueue time,
	// among every level's head and the first CountDelayedScan delayed
	// entries; nil when none of them has an enqueue time. A level's head
	// is its oldest entry unless a promoted delayed entry with an older
	// enqueue time sits behind it.
	Oldest   []byte
	OldestAt time.Time
}

// LevelCount is one level's length.
type LevelCount struct {
	Level
	Len int64
}

// Waiting is the number of entries on every level (not those taken or
// delayed).
func (c Count) Waiting() int64 {
	var n int64
	for _, l := range c.Levels {
		n += l.Len
	}
	return n
}

// Count reads every level's length and head and the delayed set in one
// round trip. enqueuedAt tells an entry's enqueue time (false when it has
// none): the queue does not know what payloads mean.
func (q *Queue) Count(ctx context.Context, enqueuedAt func(payload []byte) (time.Time, bool)) (Count, error) {
	lens := make([]*redis.IntCmd, len(q.levels))
	heads := make([]*redis.StringCmd, len(q.levels))
	var card *redis.IntCmd
	var delayed *redis.StringSliceCmd
	_, err := q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, l := range q.levels {
			lens[i] = p.LLen(ctx, l.Key)
			heads[i] = p.LIndex(ctx, l.Key, 0)
		}
		if q.delayed != "" {
			card = p.ZCard(ctx, q.delayed)
			delayed = p.ZRange(ctx, q.delayed, 0, CountDelayedScan-1)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Count{}, fmt.Errorf("queue count: %w", err)
	}
	c := Count{Levels: make([]LevelCount, len(q.levels))}
	oldest := func(v string) {
		if at, ok := enqueuedAt([]byte(v)); ok && (c.Oldest == nil || at.Before(c.OldestAt)) {
			c.Oldest, c.OldestAt = []byte(v), at
		}
	}
	for i, l := range q.levels {
		c.Levels[i] = LevelCount{Level: l, Len: lens[i].Val()}
		if h := heads[i].Val(); h != "" {
			oldest(h)
		}
	}
	if card != nil {
		c.Delayed = card.Val()
		for _, v := range delayed.Val() {
			oldest(v)
		}
	}
	return c, nil
}
