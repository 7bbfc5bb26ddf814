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
)

// Seen records the delivery under key for ttl (SET NX EX) and reports
// whether it was already recorded. The check and the record are one atomic
// step, so of two concurrent deliveries with the same id exactly one sees
// false and handles it.
func Seen(ctx context.Context, rdb redis.Cmdable, key string, ttl time.Duration) (bool, error) {
	if ttl < time.Millisecond {
		// SET NX without an expiry would remember the id forever.
		return false, fmt.Errorf("dedup %s: ttl %s: must be at least 1ms", key, ttl)
	}
	fresh, err := rdb.SetNX(ctx, key, time.Now().UTC().Format(time.RFC3339), ttl).Result()
	if err != nil {
		return false, fmt.Errorf("dedup %s: %w", key, err)
	}
	return !fresh, nil
}

// Forget deletes the record of a delivery whose handling failed, so the
// tracker's redelivery is handled instead of swallowed as a duplicate.
func Forget(ctx context.Context, rdb redis.Cmdable, key string) error {
	if err := rdb.Del(ctx, key).Err(); err != nil {
		return fmt.Errorf("dedup forget %s: %w", key, err)
	}
	return nil
}
