// Package dedup owns webhook delivery de-duplication: trackers retry
// deliveries, and replicas behind a load balancer may each receive one, so a
// delivery id is recorded in Redis (SET NX with a TTL, keys.Delivery) and a
// delivery whose id is already there is acknowledged without being handled
// again.
package dedup

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
)

// Seen records the delivery under key for ttl (SET NX EX) and reports
// whether it was already recorded. The check and the record are one atomic
// step, so of two concurrent deliveries with the same id exactly one sees
// false and handles it.
func Seen(ctx context.Context, rdb redis.Cmdable, key string, ttl time.Duration) (bool, error) {
	return SeenAny(ctx, rdb, ttl, key)
}

// SeenAny records the delivery under every key (SET NX EX each, one round
// trip) and reports whether any was already recorded: a delivery is a
// duplicate when its id or its body's digest was seen. Of two concurrent
// deliveries sharing a key exactly one sees false.
func SeenAny(ctx context.Context, rdb redis.Cmdable, ttl time.Duration, keys ...string) (bool, error) {
	if ttl < time.Millisecond {
		return false, fmt.Errorf("dedup %v: ttl %s: must be at least 1ms", keys, ttl)
	}
	now := wallclock.Now().UTC().Format(time.RFC3339)
	cmds := make([]*redis.BoolCmd, len(keys))
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.SetNX(ctx, k, now, ttl)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("dedup %v: %w", keys, err)
	}
	for _, c := range cmds {
		if !c.Val() {
			return true, nil
		}
	}
	return false, nil
}

// Forget deletes the records of a delivery whose handling failed, so the
// tracker's redelivery is handled instead of swallowed as a duplicate.
func Forget(ctx context.Context, rdb redis.Cmdable, keys ...string) error {
	for _, key := range keys {
		if err := rdb.Del(ctx, key).Err(); err != nil {
			return fmt.Errorf("dedup forget %s: %w", key, err)
		}
	}
	return nil
}
