package runstate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// The attempts hash (ticket key → last attempt taken) is written by Take
// and cleared by a terminal Release or MarkFinished; the finished marker is
// set by the same two. Which attempt comes next, and when they are used up,
// is the lifecycle's arithmetic on what LastAttempt and History return.

// LastAttempt returns the attempt of the ticket's last run (0 if unknown,
// e.g. after Redis lost its data or after the ticket finished).
func LastAttempt(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref) (int, error) {
	n, _, err := History(ctx, rdb, ref, false)
	return n, err
}

// History reads, in one round trip, the attempt of the ticket's last run
// and whether it reached a terminal state within keys.FinishedTTL (a claim
// of it then is a re-trigger).
//
// clearCancel also deletes a cancel request left over from the ticket's
// previous run in the same round trip: a fresh trigger must not be
// cancelled by it (a reclaim keeps it, so a cancel stays honoured).
func History(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref, clearCancel bool) (last int, finished bool, err error) {
	k := ref.Key()
	var attempt *redis.StringCmd
	var marker *redis.IntCmd
	_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		attempt = p.HGet(ctx, keys.Attempts(), k)
		marker = p.Exists(ctx, keys.Finished(k))
		if clearCancel {
			p.Del(ctx, keys.Cancel(k), keys.CancelTold(k))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, false, fmt.Errorf("read attempts of %s: %w", ref, err)
	}
	if last, err = attempt.Int(); errors.Is(err, redis.Nil) {
		last, err = 0, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read attempts of %s: %w", ref, err)
	}
	return last, marker.Val() == 1, nil
}

// MarkFinished records that a ticket reached a terminal state without a run
// to release (attempts exhausted): its attempt count is forgotten and a new
// claim of it counts as a re-trigger.
func MarkFinished(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref) error {
	k := ref.Key()
	// Pipelined: one round trip. Both keys share the daemon's one hash slot
	// (pkg/keys), so MULTI would work on a cluster too; it is not needed:
	// the ticket is already labelled Failed, and only a claim after a new
	// trigger reads these keys.
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HDel(ctx, keys.Attempts(), k)
		p.Set(ctx, keys.Finished(k), "1", keys.FinishedTTL)
		return nil
	})
	if err != nil {
		return fmt.Errorf("mark %s finished: %w", ref, err)
	}
	return nil
}

// Unfinished returns the ticket keys whose attempts are still counted: a
// run is under way or the ticket waits between attempts. Retention keeps
// their files.
func Unfinished(ctx context.Context, rdb redis.Cmdable) ([]string, error) {
	out, err := rdb.HKeys(ctx, keys.Attempts()).Result()
	if err != nil {
		return nil, fmt.Errorf("read attempts: %w", err)
	}
	return out, nil
}

// StartOver forgets the ticket's attempt count and any cancel request, as a
// terminal Release does, for a retry that starts the ticket's attempt chain
// over: its first request (attempt 1) is then not stale to Take, and a
// cancel left from the failed run does not stop it.
func StartOver(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref) error {
	k := ref.Key()
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HDel(ctx, keys.Attempts(), k)
		p.Del(ctx, keys.Cancel(k), keys.CancelTold(k))
		return nil
	})
	if err != nil {
		return fmt.Errorf("start %s over: %w", ref, err)
	}
	return nil
}

// resetAttemptsScript forgets the ticket's attempt count if the run's
// lock still holds the token.
//
//	KEYS[1]  heartbeat key of the ticket
//	KEYS[2]  attempts hash
//	ARGV[1]  owner token
//	ARGV[2]  ticket key (hash field)
//
// Returns 1 when the lock was the token's, else 0.
var resetAttemptsScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('HDEL', KEYS[2], ARGV[2])
return 1
`)

// ResetAttempts forgets the ticket's attempt count under the run's lock
// (token), as the run that hands the ticket to another stage does before
// that stage's label write: once the label shows the next stage, no count
// of the stage that ran is left for a repair to carry into it. A crash
// between this reset and the label write leaves the ticket in the stage
// that ran without a count; the StaleJobDetector then continues from the
// attempt of the run's in-flight record (Record.Attempt, read by Inspect
// and InspectMany). It reports whether the lock was the token's; when not,
// nothing was written.
func ResetAttempts(ctx context.Context, rdb redis.Scripter, ref platforms.Ref, token string) (bool, error) {
	k := ref.Key()
	n, err := resetAttemptsScript.Run(ctx, rdb, []string{keys.Heartbeat(k), keys.Attempts()}, token, k).Int()
	if err != nil {
		return false, fmt.Errorf("reset the attempt count of %s: %w", ref, err)
	}
	return n == 1, nil
}

// lockHistoryScript takes a claim lock and, only when it got it, reads the
// ticket's history: a claim's lock and History in one round trip. When the
// lock is held it returns the holder's token instead, which a contended
// claim reports (AlreadyClaimed names the holder) without another read.
// Given an unless key (ARGV[4] "1") that exists, it takes nothing and
// returns that key's value: a record the caller must weigh before it
// locks. The keys after it are read (GET) with the history, under the
// lock, for the caller to decide on without another round trip.
//
//	KEYS[1]  the claim lock (keys.ClaimLock)
//	KEYS[2]  attempts hash
//	KEYS[3]  finished marker of the ticket
//	KEYS[4]  when ARGV[4] is "1": a key whose presence stops the lock
//	KEYS[n…] string keys read under the lock
//	ARGV[1]  lock token
//	ARGV[2]  lock TTL in milliseconds
//	ARGV[3]  ticket key (hash field)
//	ARGV[4]  "1" when KEYS[4] is the unless key, else "0"
//
// Returns {1, last attempt or "0", 1 if finished else 0, each read key's
// value or nil…} when the lock was taken, {0, holder token or ""} when
// not, {2, KEYS[4]'s value} when KEYS[4] stopped it.
var lockHistoryScript = redis.NewScript(`
local first = 4
if ARGV[4] == '1' then
  local v = redis.call('GET', KEYS[4])
  if v then return {2, v} end
  first = 5
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local r = {1, redis.call('HGET', KEYS[2], ARGV[3]) or '0', redis.call('EXISTS', KEYS[3])}
  for i = first, #KEYS do r[#r + 1] = redis.call('GET', KEYS[i]) end
  return r
end
return {0, redis.call('GET', KEYS[1]) or ''}
`)

// Locked is what LockWithHistory saw.
type Locked struct {
	// Got is whether the lock was taken; Holder is the token of whoever
	// holds it when not ("" if it expired in between).
	Got    bool
	Holder string
	// Last and Finished are History's answers, read under the lock (only
	// when Got).
	Last     int
	Finished bool
	// Read holds, when Got, the value of each key asked to be read, nil
	// for a key that does not exist.
	Read map[string]*string
	// Stopped is whether the unless key existed: nothing was taken, and
	// Record is its value.
	Stopped bool
	Record  string
}

// LockWithHistory sets lockKey to token for ttl if it is free (SET NX PX,
// as redislock.Acquire) and, when it did, reads what History reads and
// the string keys in reads (Locked.Read), in one round trip. unless, when
// not "", is a key read first in the same round trip: if it exists nothing
// is taken and its value is returned (Stopped), for the caller to decide
// on before it locks again without it. The claim lock's release stays
// redislock.Release. It does not clear a cancel request: the claim does
// that only once the ticket is known to be claimable (ClearCancel,
// pipelined with its push).
func LockWithHistory(ctx context.Context, rdb redis.Scripter, lockKey, token string, ttl time.Duration, ref platforms.Ref, unless string, reads ...string) (Locked, error) {
	if ttl < time.Millisecond {
		return Locked{}, fmt.Errorf("lock %s: ttl %v below 1 ms", lockKey, ttl)
	}
	k := ref.Key()
	ks := []string{lockKey, keys.Attempts(), keys.Finished(k)}
	hasUnless := "0"
	if unless != "" {
		ks, hasUnless = append(ks, unless), "1"
	}
	ks = append(ks, reads...)
	vals, err := lockHistoryScript.Run(ctx, rdb, ks, token, ttl.Milliseconds(), k, hasUnless).Slice()
	if err != nil {
		return Locked{}, fmt.Errorf("lock %s and read attempts of %s: %w", lockKey, ref, err)
	}
	if len(vals) >= 2 && vals[0] == int64(2) {
		rec, _ := vals[1].(string)
		return Locked{Stopped: true, Record: rec}, nil
	}
	if len(vals) >= 2 && vals[0] == int64(0) {
		holder, _ := vals[1].(string)
		return Locked{Holder: holder}, nil
	}
	if len(vals) != 3+len(reads) {
		return Locked{}, fmt.Errorf("lock %s: unexpected reply %v", lockKey, vals)
	}
	raw, _ := vals[1].(string)
	last, err := strconv.Atoi(raw)
	if err != nil {
		// An undecodable count reads as unknown, as History's caller would
		// have failed on it; the lock is ours either way.
		last = 0
	}
	l := Locked{Got: true, Last: last, Finished: vals[2] == int64(1)}
	if len(reads) > 0 {
		l.Read = make(map[string]*string, len(reads))
		for i, key := range reads {
			if v, ok := vals[3+i].(string); ok {
				l.Read[key] = &v
			} else {
				l.Read[key] = nil
			}
		}
	}
	return l, nil
}

// dueScript raises the ticket's recorded attempt to ARGV[2], never lowers it.
//
//	KEYS[1]  attempts hash
//	ARGV[1]  ticket key (hash field)
//	ARGV[2]  attempt due next
var dueScript = redis.NewScript(`
local cur = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if tonumber(ARGV[2]) > cur then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
end
return 0
`)

// Due records that the ticket's next run is attempt: a retry scheduled
// after a failed attempt counts the failed one as used before its request
// reaches the delayed set. Were that request lost, the EnqueuedReconciler
// re-pushes what LastAttempt returns, so the retry keeps its number instead
// of re-running the failed attempt (one run more than max_attempts). A
// hand-back, which re-runs the same attempt, does not call it.
func Due(ctx context.Context, rdb redis.Scripter, ref platforms.Ref, attempt int) error {
	if err := dueScript.Run(ctx, rdb, []string{keys.Attempts()}, ref.Key(), attempt).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("record attempt %d due for %s: %w", attempt, ref, err)
	}
	return nil
}
