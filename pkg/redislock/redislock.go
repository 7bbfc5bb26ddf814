// Package redislock owns the token-owned Redis key: a key set with SET NX PX
// whose value is the owner's random token, renewed and released only by
// compare-and-set. It is the one primitive behind the claim lock, the
// heartbeat (run ownership) key and the leader leases, so every one of them
// has the same rule: only the holder of the token may extend or delete it,
// and a holder whose key expired and was taken over can no longer touch it.
package redislock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// renewScript extends the key's TTL only while it still holds our token.
//
// KEYS[1] -> the lock key
// ARGV[1] -> the owner's token
// ARGV[2] -> new TTL in milliseconds
//
// Returns 1 if the TTL was extended, 0 if the key is missing or held by
// another token.
var renewScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
`)

// releaseScript deletes the key only while it still holds our token.
//
// KEYS[1] -> the lock key
// ARGV[1] -> the owner's token
//
// Returns 1 if the key was deleted, 0 if it is missing or held by another
// token.
var releaseScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0
`)

// holderScript reads the value and the remaining TTL in one atomic step, so
// the TTL belongs to the token returned with it.
//
// KEYS[1] -> the lock key
//
// Returns {value, pttl}: {false, -2} when the key is missing; pttl is -1 when
// the key has no expiry.
var holderScript = redis.NewScript(`
local v = redis.call("GET", KEYS[1])
return {v, redis.call("PTTL", KEYS[1])}
`)

// NewToken returns 128 random bits as 32 hex characters: unguessable and
// unique enough that two owners never share a token.
func NewToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error
	return hex.EncodeToString(b[:])
}

// Acquire sets key to token with ttl if the key does not exist (SET NX PX)
// and reports whether it did.
func Acquire(ctx context.Context, rdb redis.Cmdable, key, token string, ttl time.Duration) (bool, error) {
	if err := checkTTL(ttl); err != nil {
		return false, fmt.Errorf("acquire %s: %w", key, err)
	}
	ok, err := rdb.SetNX(ctx, key, token, ttl).Result()
	if err != nil {
		return false, fmt.Errorf("acquire %s: %w", key, err)
	}
	return ok, nil
}

// Renew sets key's TTL to ttl if it still holds token, and reports whether
// it did. false means the lock was lost (expired or taken over); the caller
// must stop acting as owner.
func Renew(ctx context.Context, rdb redis.Cmdable, key, token string, ttl time.Duration) (bool, error) {
	if err := checkTTL(ttl); err != nil {
		return false, fmt.Errorf("renew %s: %w", key, err)
	}
	n, err := renewScript.Run(ctx, rdb, []string{key}, token, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("renew %s: %w", key, err)
	}
	return n == 1, nil
}

// Release deletes key if it still holds token, and reports whether it did.
// false is not an error: the lock had already expired or changed hands.
func Release(ctx context.Context, rdb redis.Cmdable, key, token string) (bool, error) {
	n, err := releaseScript.Run(ctx, rdb, []string{key}, token).Int()
	if err != nil {
		return false, fmt.Errorf("release %s: %w", key, err)
	}
	return n == 1, nil
}

// ReleaseOn queues Release on p, a pipeline, so a holder can send its
// release with its last writes in one round trip. The script is sent in
// full (EVAL, not EVALSHA): a pipeline cannot fall back after NOSCRIPT.
// The command's Int() is 1 when the lock was still token's.
func ReleaseOn(ctx context.Context, p redis.Pipeliner, key, token string) *redis.Cmd {
	return releaseScript.Eval(ctx, p, []string{key}, token)
}

// Holder returns the token that holds key and its remaining TTL, or "" and 0
// when the key is free. ttl is negative if the key exists without an expiry
// (which these locks never set).
func Holder(ctx context.Context, rdb redis.Cmdable, key string) (token string, ttl time.Duration, err error) {
	vals, err := holderScript.Run(ctx, rdb, []string{key}).Slice()
	if err != nil {
		return "", 0, fmt.Errorf("holder %s: %w", key, err)
	}
	if len(vals) != 2 {
		return "", 0, fmt.Errorf("holder %s: unexpected reply %v", key, vals)
	}
	v, _ := vals[0].(string) // nil (Lua false) when the key is missing
	if v == "" {
		return "", 0, nil
	}
	pttl, ok := vals[1].(int64)
	if !ok {
		return "", 0, fmt.Errorf("holder %s: unexpected PTTL %v", key, vals[1])
	}
	if pttl < 0 {
		return v, -1, nil
	}
	return v, time.Duration(pttl) * time.Millisecond, nil
}

// Check reports whether key still holds token: the fencing check a holder
// makes right before a write that only the owner may do.
func Check(ctx context.Context, rdb redis.Cmdable, key, token string) (bool, error) {
	v, err := rdb.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check %s: %w", key, err)
	}
	return v == token, nil
}

// checkTTL rejects TTLs that would create a lock that never expires
// (SET with no PX) or that Redis cannot express in milliseconds.
func checkTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("ttl %s: must be at least 1ms", ttl)
	}
	return nil
}
