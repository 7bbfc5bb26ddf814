package redislock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Locker hands out short token locks: TryLock returns an unlock function
// that releases only its own token. It satisfies platforms.Locker, which
// Jira's tracker uses to make its unconditional label PUT exclusive.
type Locker struct{ RDB redis.Cmdable }

// TryLock takes key for ttl; ok is false when it is held by someone else.
func (l Locker) TryLock(ctx context.Context, key string, ttl time.Duration) (unlock func(), ok bool, err error) {
	token := NewToken()
	ok, err = Acquire(ctx, l.RDB, key, token, ttl)
	if err != nil || !ok {
		return nil, ok, err
	}
	return func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = Release(rctx, l.RDB, key, token)
	}, true, nil
}
