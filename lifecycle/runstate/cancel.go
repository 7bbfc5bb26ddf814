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

// CancelTold reports whether the ticket's cancellation was told on the
// ticket already (its marker is set).
func CancelTold(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref) (bool, error) {
	n, err := rdb.Exists(ctx, keys.CancelTold(ref.Key())).Result()
	if err != nil {
		return false, fmt.Errorf("read whether the cancellation of %s was told: %w", ref, err)
	}
	return n == 1, nil
}

// MarkCancelTold sets the ticket's cancellation-told marker to cause, for
// ttl, once the cancellation comment is posted: a request honoured again
// (its Failed write did not land) is then not told twice. Marking after
// the post, not before, means a consumer dying in between costs a second
// comment, never a missing one.
func MarkCancelTold(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref, cause string, ttl time.Duration) error {
	if ttl <= 0 {
		ttl = keys.CancelTTL
	}
	if err := rdb.Set(ctx, keys.CancelTold(ref.Key()), cause, ttl).Err(); err != nil {
		return fmt.Errorf("mark cancellation of %s told: %w", ref, err)
	}
	return nil
}
