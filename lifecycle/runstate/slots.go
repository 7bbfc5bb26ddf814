package runstate

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// Slot is one concurrency semaphore a run must hold a place in.
type Slot struct {
	Key   string
	Limit int
}

// ProjectSlot is the semaphore of one project, limit runs at a time.
func ProjectSlot(project string, limit int) Slot {
	return Slot{Key: keys.ProjectSlots(project), Limit: limit}
}

// TokenSlot is the semaphore shared by every project using one tracker
// token. tokenID is a digest of the token, never the token itself: keys are
// visible to anyone who can read Redis.
func TokenSlot(tokenID string, limit int) Slot {
	return Slot{Key: keys.TokenSlots(tokenID), Limit: limit}
}

// Full reports the first of slots that has no place left at now, without
// taking one: a cheap read before the tracker is asked for the ticket.
// Take decides for good.
func Full(ctx context.Context, rdb redis.Cmdable, slots []Slot, now time.Time) (string, bool, error) {
	if len(slots) == 0 {
		return "", false, nil
	}
	from := "(" + strconv.FormatInt(now.UnixMilli(), 10)
	cmds := make([]*redis.IntCmd, len(slots))
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, s := range slots {
			cmds[i] = p.ZCount(ctx, s.Key, from, "+inf")
		}
		return nil
	}); err != nil {
		return "", false, fmt.Errorf("read concurrency slots: %w", err)
	}
	for i, s := range slots {
		if cmds[i].Val() >= int64(s.Limit) {
			return s.Key, true, nil
		}
	}
	return "", false, nil
}

// RenewSlots moves the expiry of the run's places in its slots to until,
// alongside each heartbeat renewal, so a long run keeps its place and a
// dead one loses it within the heartbeat TTL. A place already pruned is not
// re-added (XX): the run keeps going, over the limit for once.
func RenewSlots(ctx context.Context, rdb redis.Cmdable, slots []Slot, token string, until time.Time) error {
	if len(slots) == 0 {
		return nil
	}
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, s := range slots {
			p.ZAddXX(ctx, s.Key, redis.Z{Score: float64(until.UnixMilli()), Member: token})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("renew concurrency slots: %w", err)
	}
	return nil
}
