package runstate

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// MarkClaimFresh records, on pipe (the claim's push, before the push), that
// requestID is the request the claim of ref just pushed with its write's
// answer. Only the first take of that request may trust the answer
// (TakeClaimFresh): a copy of the request taken later (given back, or put
// back from a dead replica's processing list) may find the ticket moved
// on, which some trackers' label writes do not refuse.
func MarkClaimFresh(ctx context.Context, pipe redis.Cmdable, ref platforms.Ref, requestID string) {
	pipe.Set(ctx, keys.ClaimFresh(ref.Key()), requestID, keys.ClaimFreshTTL)
}

// TakeClaimFresh deletes ref's claim-fresh mark if it names requestID and
// reports whether it did: true once, for the first take of the claim's own
// request. A mark naming another request (a later claim's) is left alone.
func TakeClaimFresh(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref, requestID string) (bool, error) {
	ok, err := redislock.Release(ctx, rdb, keys.ClaimFresh(ref.Key()), requestID)
	if err != nil {
		return false, fmt.Errorf("take claim-fresh mark of %s: %w", ref, err)
	}
	return ok, nil
}
