package runstate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// RequestCancel stores cause as the ticket's cancel request for ttl
// (keys.CancelTTL when ttl ≤ 0), so a request for a ticket nobody runs any
// more does not linger. Whoever owns the ticket's request or run reads it
// (RequestedCancel); a terminal Release forgets it.
func RequestCancel(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref, cause string, ttl time.Duration) error {
	if ttl <= 0 {
		ttl = keys.CancelTTL
	}
	if err := rdb.Set(ctx, keys.Cancel(ref.Key()), cause, ttl).Err(); err != nil {
		return fmt.Errorf("request cancel of %s: %w", ref, err)
	}
	return nil
}

// RequestedCancel returns the cause asked for the ticket, "" when none.
func RequestedCancel(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref) (string, error) {
	v, err := rdb.Get(ctx, keys.Cancel(ref.Key())).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read cancel request of %s: %w", ref, err)
	}
	return v, nil
}

// ClearCancel deletes the ticket's cancel request if it still says cause
// ("" deletes whatever it says, and the told marker with it), so a newer
// request is never lost.
func ClearCancel(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref, cause string) error {
	var err error
	if cause == "" {
		err = rdb.Del(ctx, keys.Cancel(ref.Key()), keys.CancelTold(ref.Key())).Err()
	} else {
		_, err = redislock.Release(ctx, rdb, keys.Cancel(ref.Key()), cause)
	}
	if err != nil {
		return fmt.Errorf("clear cancel request of %s: %w", ref, err)
	}
	return nil
}

// CancelKey names the key a cancel request of ref is stored under, for
// operators to see (agentsmithctl cancel prints it). Reads and writes go
// through the functions above.
func CancelKey(ref platforms.Ref) string { return keys.Cancel(ref.Key()) }

// MarkCancelTold sets the ticket's cancellation-told marker to cause if it
// is unset (SET NX, for ttl) and reports whether it did: only the
// consumer that sets it posts the cancellation comment.
func MarkCancelTold(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref, cause string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		ttl = keys.CancelTTL
	}
	ok, err := rdb.SetNX(ctx, keys.CancelTold(ref.Key()), cause, ttl).Result()
	if err != nil {
		return false, fmt.Errorf("mark cancellation of %s told: %w", ref, err)
	}
	return ok, nil
}

// UnmarkCancelTold deletes the ticket's cancellation-told marker, for a
// comment that was not posted, so the next consumer honouring the request
// tells it.
func UnmarkCancelTold(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref) error {
	if err := rdb.Del(ctx, keys.CancelTold(ref.Key())).Err(); err != nil {
		return fmt.Errorf("unmark cancellation of %s told: %w", ref, err)
	}
	return nil
}
