package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// RunRecord is a ticket's entry in the in-flight index
// (keys.Inflight, field = ticket key). It lets StaleJobDetector find the
// owner instance of every running pipeline from Redis alone, and find the
// attempt to continue from when it reverts a dead run.
type RunRecord struct {
	Ref       platforms.Ref `json:"ref"`
	Instance  string        `json:"instance"`
	Token     string        `json:"token"`
	RequestID string        `json:"request_id"`
	Attempt   int           `json:"attempt"`
	Started   time.Time     `json:"started"`
	// Slots are the concurrency semaphores the run holds a place in.
	Slots []string `json:"slots,omitempty"`
}

// takeRunScript takes a ticket's run: the heartbeat key doubles as the run
// lock, so two requests for one ticket can never both run, even on trackers
// without conditional writes. It also takes one slot of each concurrency
// semaphore (a sorted set of run tokens scored by expiry), or nothing at
// all when one of them is full; expired slots (a dead replica's) are pruned
// first, so they free themselves within the heartbeat TTL.
//
//	KEYS[1] heartbeat key of the ticket
//	KEYS[2] in-flight index (hash)
//	KEYS[3] attempts hash
//	KEYS[4..] concurrency semaphores (sorted sets), if any
//	ARGV[1] owner token
//	ARGV[2] heartbeat TTL in milliseconds
//	ARGV[3] ticket key (hash field)
//	ARGV[4] RunRecord JSON
//	ARGV[5] attempt
//	ARGV[6] now in unix milliseconds
//	ARGV[6+i] the limit of KEYS[3+i]
//
// Returns 1 when taken, 0 when another run holds the heartbeat, 2 when the
// ticket already ran a later attempt (the request is stale: say an old
// retry outlived a re-trigger), -i when semaphore KEYS[3+i] is full.
var takeRunScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
local last = tonumber(redis.call('HGET', KEYS[3], ARGV[3]) or '0') or 0
if tonumber(ARGV[5]) < last then
  return 2
end
local now = tonumber(ARGV[6])
for i = 4, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
  if redis.call('ZCARD', KEYS[i]) >= tonumber(ARGV[i + 3]) then
    return 3 - i
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('HSET', KEYS[2], ARGV[3], ARGV[4])
redis.call('HSET', KEYS[3], ARGV[3], ARGV[5])
for i = 4, #KEYS do
  redis.call('ZADD', KEYS[i], now + tonumber(ARGV[2]), ARGV[1])
end
return 1
`)

// releaseRunScript ends a run: it deletes the heartbeat and the in-flight
// entry, each only if it still belongs to the given token, so a run that
// lost its ownership can never free its successor's.
//
//	KEYS[1] heartbeat key
//	KEYS[2] in-flight index
//	KEYS[3] attempts hash
//	KEYS[4] finished marker of the ticket
//	KEYS[5] cancel request of the ticket
//	KEYS[6..] the run's concurrency semaphores, if any
//	ARGV[1] owner token
//	ARGV[2] ticket key (hash field)
//	ARGV[3] "1" when the ticket reached a terminal state: forget the attempt
//	        count and any cancel request, and set the finished marker
//	ARGV[4] finished marker TTL in milliseconds
//
// Returns 1 when the heartbeat was ours, else 0.
var releaseRunScript = redis.NewScript(`
local mine = 0
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  mine = 1
end
local rec = redis.call('HGET', KEYS[2], ARGV[2])
if rec then
  local ok, decoded = pcall(cjson.decode, rec)
  if (not ok) or decoded['token'] == ARGV[1] then
    redis.call('HDEL', KEYS[2], ARGV[2])
  end
end
if ARGV[3] == '1' and mine == 1 then
  redis.call('HDEL', KEYS[3], ARGV[2])
  redis.call('SET', KEYS[4], '1', 'PX', ARGV[4])
  redis.call('DEL', KEYS[5])
end
for i = 6, #KEYS do
  redis.call('ZREM', KEYS[i], ARGV[1])
end
return mine
`)

// TakeRun records rec as the owner of its ticket's run.
func TakeRun(ctx context.Context, rdb redis.Scripter, rec RunRecord, ttl time.Duration) (bool, error) {
	res, _, err := TakeRunLimited(ctx, rdb, rec, ttl, time.Now(), nil)
	return res == RunTaken, err
}

// Slot is one concurrency semaphore a run must hold a place in.
type Slot struct {
	Key   string
	Limit int
}

// TakeResult is how TakeRunLimited ended.
type TakeResult int

const (
	RunTaken   TakeResult = iota
	RunHeld               // another run owns the ticket
	RunLimited            // a semaphore is full; nothing was taken
	RunStale              // the ticket already ran a later attempt than the request's
)

// TakeRunLimited records rec as the owner of its ticket's run and takes a
// place in every slot, atomically: all or nothing. A full slot is
// RunLimited and names the slot's key; rec.Slots is set to the slots' keys
// so every release (also StaleJobDetector's) frees them.
func TakeRunLimited(ctx context.Context, rdb redis.Scripter, rec RunRecord, ttl time.Duration, now time.Time, slots []Slot) (TakeResult, string, error) {
	k := rec.Ref.Key()
	rec.Slots = nil
	for _, s := range slots {
		rec.Slots = append(rec.Slots, s.Key)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return 0, "", fmt.Errorf("take run: %w", err)
	}
	keyList := append([]string{keys.Heartbeat(k), keys.Inflight(), keys.Attempts()}, rec.Slots...)
	args := []any{rec.Token, ttl.Milliseconds(), k, string(b), rec.Attempt, now.UnixMilli()}
	for _, s := range slots {
		args = append(args, s.Limit)
	}
	n, err := takeRunScript.Run(ctx, rdb, keyList, args...).Int()
	switch {
	case err != nil:
		return 0, "", fmt.Errorf("take run %s: %w", k, err)
	case n == 1:
		return RunTaken, "", nil
	case n == 0:
		return RunHeld, "", nil
	case n == 2:
		return RunStale, "", nil
	case -n <= len(slots):
		return RunLimited, slots[-n-1].Key, nil
	}
	return 0, "", fmt.Errorf("take run %s: unexpected answer %d", k, n)
}

// RenewSlots moves the expiry of the run's places in its slots to until,
// alongside each heartbeat renewal, so a long run keeps its place and a
// dead one loses it within the heartbeat TTL. A place already pruned is not
// re-added (XX): the run keeps going, over the limit for once.
func RenewSlots(ctx context.Context, rdb redis.Cmdable, slots []string, token string, until time.Time) error {
	if len(slots) == 0 {
		return nil
	}
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, s := range slots {
			p.ZAddXX(ctx, s, redis.Z{Score: float64(until.UnixMilli()), Member: token})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("renew concurrency slots: %w", err)
	}
	return nil
}

// ReleaseRun ends the run owned by token; terminal forgets the attempt
// count and any cancel request, and marks the ticket finished. The run's concurrency slots, named by its in-flight record, are
// freed too.
func ReleaseRun(ctx context.Context, rdb redis.UniversalClient, ref platforms.Ref, token string, terminal bool) (bool, error) {
	k := ref.Key()
	flag := "0"
	if terminal {
		flag = "1"
	}
	keyList := []string{keys.Heartbeat(k), keys.Inflight(), keys.Attempts(), keys.Finished(k), keys.Cancel(k)}
	if raw, err := rdb.HGet(ctx, keys.Inflight(), k).Result(); err == nil {
		var rec RunRecord
		if json.Unmarshal([]byte(raw), &rec) == nil && rec.Token == token {
			keyList = append(keyList, rec.Slots...)
		}
	}
	n, err := releaseRunScript.Run(ctx, rdb, keyList, token, k, flag, keys.FinishedTTL.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("release run %s: %w", k, err)
	}
	return n == 1, nil
}

// InflightRuns reads the in-flight index. Undecodable entries are returned
// by field with a zero record so the caller can clear them.
func InflightRuns(ctx context.Context, rdb redis.Cmdable) (map[string]RunRecord, error) {
	raw, err := rdb.HGetAll(ctx, keys.Inflight()).Result()
	if err != nil {
		return nil, fmt.Errorf("read in-flight index: %w", err)
	}
	out := make(map[string]RunRecord, len(raw))
	for field, v := range raw {
		var rec RunRecord
		_ = json.Unmarshal([]byte(v), &rec)
		out[field] = rec
	}
	return out, nil
}

// LastAttempt returns the attempt of the ticket's last run (0 if unknown,
// e.g. after Redis lost its data).
func LastAttempt(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref) (int, error) {
	n, _, err := claimHistory(ctx, rdb, ref, false)
	return n, err
}

// claimHistory reads, in one round trip, the attempt of the ticket's last
// run and whether it reached a terminal state within keys.FinishedTTL.
//
// clearCancel also deletes a cancel request left over from the ticket's
// previous run in the same round trip: a fresh trigger must not be
// cancelled by it (a reclaim keeps it, so a cancel stays honoured).
func claimHistory(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref, clearCancel bool) (last int, finished bool, err error) {
	k := ref.Key()
	var attempt *redis.StringCmd
	var marker *redis.IntCmd
	_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		attempt = p.HGet(ctx, keys.Attempts(), k)
		marker = p.Exists(ctx, keys.Finished(k))
		if clearCancel {
			p.Del(ctx, keys.Cancel(k))
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return 0, false, fmt.Errorf("read attempts of %s: %w", ref, err)
	}
	if last, err = attempt.Int(); err == redis.Nil {
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
