package runstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Record is a ticket's entry in the in-flight index (keys.Inflight, field =
// ticket key). It lets StaleJobDetector find the owner instance of every
// running pipeline from Redis alone, and find the attempt to continue from
// when it reverts a dead run.
type Record struct {
	Ref       platforms.Ref `json:"ref"`
	Instance  string        `json:"instance"`
	Token     string        `json:"token"`
	RequestID string        `json:"request_id"`
	Attempt   int           `json:"attempt"`
	Started   time.Time     `json:"started"`
	// Slots are the concurrency semaphores the run holds a place in.
	Slots []string `json:"slots,omitempty"`
}

// takeScript takes a ticket's run: the heartbeat key doubles as the run
// lock, so two requests for one ticket can never both run, even on trackers
// without conditional writes. It also takes one slot of each concurrency
// semaphore (a sorted set of run tokens scored by expiry), or nothing at
// all when one of them is full; expired slots (a dead replica's) are pruned
// first, so they free themselves within the heartbeat TTL.
//
// A free run lock proves no run holds the ticket only if the lock expired
// or was released: a Redis restart (emptied, rolled back to an older
// snapshot, or an AOF that lost its last second) loses heartbeats at once
// while their runs go on until they next look (see RestartGrace). So while
// the Redis node holding the lock has been up for less than the grace,
// nothing is taken. INFO runs on that node: in a cluster it is the
// ticket's own master.
//
// A ticket whose last run's outcome waits for the tracker (keys.Outcomes)
// is held as well: that run's pipeline ended and its outcome is written
// from the record, never by running the pipeline again.
//
//	KEYS[1]   heartbeat key of the ticket
//	KEYS[2]   in-flight index (hash)
//	KEYS[3]   attempts hash
//	KEYS[4]   outcomes hash
//	KEYS[5..] concurrency semaphores (sorted sets), if any
//	ARGV[1]   owner token
//	ARGV[2]   heartbeat TTL in milliseconds
//	ARGV[3]   ticket key (hash field)
//	ARGV[4]   Record JSON
//	ARGV[5]   attempt
//	ARGV[6]   now in unix milliseconds
//	ARGV[7]   restart grace in milliseconds (0: none)
//	ARGV[7+i] the limit of KEYS[4+i]
//
// Returns {code, n}: {1, 0} when taken, {0, 0} when another run holds the
// heartbeat or the last run's outcome waits, {2, 0} when the ticket already
// ran a later attempt (the request is stale: say an old retry outlived a
// re-trigger), {3, i} when semaphore KEYS[4+i] is full, {4, ms} when Redis
// started less than the grace ago and ms more must pass.
var takeScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('HEXISTS', KEYS[4], ARGV[3]) == 1 then
  return {0, 0}
end
local grace = tonumber(ARGV[7])
if grace > 0 then
  local up = tonumber(string.match(redis.call('INFO', 'server'), 'uptime_in_seconds:(%d+)'))
  if up == nil then
    return redis.error_reply('no uptime_in_seconds in INFO server')
  end
  -- Whole seconds, rounded down: up is a lower bound of the uptime.
  if up * 1000 <= grace then
    return {4, (math.floor(grace / 1000) + 1 - up) * 1000}
  end
end
local last = tonumber(redis.call('HGET', KEYS[3], ARGV[3]) or '0') or 0
if tonumber(ARGV[5]) < last then
  return {2, 0}
end
local now = tonumber(ARGV[6])
for i = 5, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
  if redis.call('ZCARD', KEYS[i]) >= tonumber(ARGV[i + 3]) then
    return {3, i - 4}
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('HSET', KEYS[2], ARGV[3], ARGV[4])
redis.call('HSET', KEYS[3], ARGV[3], ARGV[5])
for i = 5, #KEYS do
  redis.call('ZADD', KEYS[i], now + tonumber(ARGV[2]), ARGV[1])
end
return {1, 0}
`)

// releaseScript ends a run: it deletes the heartbeat and the in-flight
// entry, each only if it still belongs to the given token, so a run that
// lost its ownership can never free its successor's. Its places in the
// concurrency semaphores go whatever the heartbeat says: they are the
// token's own members.
//
//	KEYS[1]   heartbeat key
//	KEYS[2]   in-flight index
//	KEYS[3]   attempts hash
//	KEYS[4]   finished marker of the ticket
//	KEYS[5]   cancel request of the ticket
//	KEYS[6]   the ticket's cancellation-told marker
//	KEYS[7..] the run's concurrency semaphores, if any
//	ARGV[1]   owner token
//	ARGV[2]   ticket key (hash field)
//	ARGV[3]   "1" when the ticket reached a terminal state: forget the
//	          attempt count and any cancel request, and set the finished
//	          marker (only if the heartbeat was ours)
//	ARGV[4]   finished marker TTL in milliseconds
//
// Returns 1 when the heartbeat was ours, else 0.
var releaseScript = redis.NewScript(`
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
  redis.call('DEL', KEYS[5], KEYS[6])
end
for i = 7, #KEYS do
  redis.call('ZREM', KEYS[i], ARGV[1])
end
return mine
`)

// TakeResult is how Take ended.
type TakeResult int

// Take's results.
const (
	Taken      TakeResult = iota
	Held                  // another run owns the ticket, or its last run's outcome waits
	Limited               // a semaphore is full; nothing was taken
	Stale                 // the ticket already ran a later attempt than the request's
	Restarting            // Redis restarted within the grace; nothing was taken
)

// TakeArgs are what a Take asks for besides the record.
type TakeArgs struct {
	TTL   time.Duration // the heartbeat's
	Now   time.Time     // scores the semaphores' places
	Slots []Slot
	// RestartGrace: nothing is taken until the Redis node has been up this
	// long (0: at once, for tests that start a fresh Redis).
	RestartGrace time.Duration
}

// Took is how a Take ended, with what the caller needs to wait.
type Took struct {
	Result TakeResult
	Slot   string        // Limited: the full semaphore's key
	Wait   time.Duration // Restarting: how long until the grace has passed
}

// Take records rec as the owner of its ticket's run (heartbeat set to
// rec.Token for a.TTL, in-flight entry, attempt count) and takes a place
// in every slot, atomically: all or nothing. A full slot is Limited and
// names the slot's key; rec.Slots is set to the slots' keys so every
// release (also StaleJobDetector's) frees them.
func Take(ctx context.Context, rdb redis.Scripter, rec Record, a TakeArgs) (Took, error) {
	k := rec.Ref.Key()
	rec.Slots = nil
	for _, s := range a.Slots {
		rec.Slots = append(rec.Slots, s.Key)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return Took{}, fmt.Errorf("take run: %w", err)
	}
	keyList := append([]string{keys.Heartbeat(k), keys.Inflight(), keys.Attempts(), keys.Outcomes()}, rec.Slots...)
	args := []any{rec.Token, a.TTL.Milliseconds(), k, string(b), rec.Attempt, a.Now.UnixMilli(), max(a.RestartGrace.Milliseconds(), 0)}
	for _, s := range a.Slots {
		args = append(args, s.Limit)
	}
	res, err := takeScript.Run(ctx, rdb, keyList, args...).Int64Slice()
	if err != nil {
		return Took{}, fmt.Errorf("take run %s: %w", k, err)
	}
	if len(res) != 2 {
		return Took{}, fmt.Errorf("take run %s: unexpected answer %v", k, res)
	}
	switch code, n := res[0], res[1]; {
	case code == 1:
		return Took{Result: Taken}, nil
	case code == 0:
		return Took{Result: Held}, nil
	case code == 2:
		return Took{Result: Stale}, nil
	case code == 3 && n >= 1 && int(n) <= len(a.Slots):
		return Took{Result: Limited, Slot: a.Slots[n-1].Key}, nil
	case code == 4:
		return Took{Result: Restarting, Wait: time.Duration(n) * time.Millisecond}, nil
	}
	return Took{}, fmt.Errorf("take run %s: unexpected answer %v", k, res)
}

// Release ends the run owned by token; terminal forgets the attempt count
// and any cancel request, and marks the ticket finished. The run's
// concurrency slots, named by its in-flight record, are freed too. It
// reports whether the heartbeat was still the token's.
func Release(ctx context.Context, rdb redis.UniversalClient, ref platforms.Ref, token string, terminal bool) (bool, error) {
	k := ref.Key()
	flag := "0"
	if terminal {
		flag = "1"
	}
	keyList := []string{keys.Heartbeat(k), keys.Inflight(), keys.Attempts(), keys.Finished(k), keys.Cancel(k), keys.CancelTold(k)}
	if raw, err := rdb.HGet(ctx, keys.Inflight(), k).Result(); err == nil {
		var rec Record
		if json.Unmarshal([]byte(raw), &rec) == nil && rec.Token == token {
			keyList = append(keyList, rec.Slots...)
		}
	}
	n, err := releaseScript.Run(ctx, rdb, keyList, token, k, flag, keys.FinishedTTL.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("release run %s: %w", k, err)
	}
	return n == 1, nil
}

// Renew extends the run's heartbeat to ttl if it still holds token.
// false means the run lost its ownership (expired or taken over): the
// caller must stop the pipeline and write nothing more.
func Renew(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref, token string, ttl time.Duration) (bool, error) {
	return redislock.Renew(ctx, rdb, keys.Heartbeat(ref.Key()), token, ttl)
}

// Check reports whether the ticket's heartbeat still holds token: the
// fencing check a run makes right before each write only the owner may do.
func Check(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref, token string) (bool, error) {
	return redislock.Check(ctx, rdb, keys.Heartbeat(ref.Key()), token)
}

// Holder returns the token of the run that holds the ticket's heartbeat and
// the heartbeat's remaining TTL, or "" when no run holds it.
func Holder(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref) (token string, left time.Duration, err error) {
	return redislock.Holder(ctx, rdb, keys.Heartbeat(ref.Key()))
}

// Running reports whether any run holds the ticket's heartbeat, or its
// last run's outcome waits to be written (OutcomeWaits), for repairs that
// must leave a ticket alone while a run is moving it: a run whose final
// write waits for the tracker is still moving it.
func Running(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref) (bool, error) {
	n, err := rdb.Exists(ctx, keys.Heartbeat(ref.Key())).Result()
	if err != nil {
		return false, fmt.Errorf("read heartbeat of %s: %w", ref, err)
	}
	if n == 1 {
		return true, nil
	}
	return OutcomeWaits(ctx, rdb, ref)
}

// Evict deletes the ticket's heartbeat if it still holds token, without
// touching the rest of the run's state: the run is fenced out (its next
// renewal or check fails, and it stops) and StaleJobDetector, which finds
// its in-flight entry without a heartbeat, reverts the ticket. It is the
// operator's lever for a run left behind (agentsmithctl release).
func Evict(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref, token string) (bool, error) {
	return redislock.Release(ctx, rdb, keys.Heartbeat(ref.Key()), token)
}

// Runs reads the in-flight index. Undecodable entries are returned by
// field with a zero record so the caller can clear them (Forget).
func Runs(ctx context.Context, rdb redis.Cmdable) (map[string]Record, error) {
	raw, err := rdb.HGetAll(ctx, keys.Inflight()).Result()
	if err != nil {
		return nil, fmt.Errorf("read in-flight index: %w", err)
	}
	out := make(map[string]Record, len(raw))
	for field, v := range raw {
		var rec Record
		_ = json.Unmarshal([]byte(v), &rec)
		out[field] = rec
	}
	return out, nil
}

// RunOf reads the ticket's in-flight record; false when it has none (or
// one that does not decode).
func RunOf(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref) (Record, bool, error) {
	raw, err := rdb.HGet(ctx, keys.Inflight(), ref.Key()).Result()
	if errors.Is(err, redis.Nil) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("read in-flight index: %w", err)
	}
	var rec Record
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return Record{}, false, nil
	}
	return rec, true, nil
}

// Forget deletes an in-flight entry by field, whatever it holds: for an
// entry that does not decode, so no token can release it.
func Forget(ctx context.Context, rdb redis.Cmdable, field string) error {
	if err := rdb.HDel(ctx, keys.Inflight(), field).Err(); err != nil {
		return fmt.Errorf("forget in-flight entry %q: %w", field, err)
	}
	return nil
}

// Count queues the number of running pipelines (HLEN of the in-flight
// index) on c, a client or a pipeline, so a reader can fetch it in the
// round trip it makes anyway.
func Count(ctx context.Context, c redis.Cmdable) *redis.IntCmd {
	return c.HLen(ctx, keys.Inflight())
}

// Observed is one in-flight run as Inspect saw it.
type Observed struct {
	// Field is the in-flight index field (the ticket key); Record is zero
	// when the entry does not decode.
	Field  string
	Record Record
	// Holder is the token in the ticket's heartbeat ("" when it expired)
	// and HeartbeatLeft its remaining TTL.
	Holder        string
	HeartbeatLeft time.Duration
	// OwnerAlive is whether Record.Instance's liveness key exists.
	OwnerAlive bool
}

// Inspect reads every in-flight run with its heartbeat and its owner
// instance's liveness, in two round trips whatever the number of runs,
// sorted by field. It is not atomic: a run may end between reading the
// index and its heartbeat, which then shows as expired.
func Inspect(ctx context.Context, rdb redis.UniversalClient) ([]Observed, error) {
	runs, err := Runs(ctx, rdb)
	if err != nil || len(runs) == 0 {
		return nil, err
	}
	holder := make(map[string]*redis.StringCmd, len(runs))
	left := make(map[string]*redis.DurationCmd, len(runs))
	alive := map[string]*redis.IntCmd{}
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for field, rec := range runs {
			holder[field] = p.Get(ctx, keys.Heartbeat(field))
			left[field] = p.PTTL(ctx, keys.Heartbeat(field))
			if _, ok := alive[rec.Instance]; !ok {
				alive[rec.Instance] = p.Exists(ctx, keys.Instance(rec.Instance))
			}
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read heartbeats and liveness: %w", err)
	}
	out := make([]Observed, 0, len(runs))
	for field, rec := range runs {
		o := Observed{Field: field, Record: rec}
		hb, err := holder[field].Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("read heartbeat of %s: %w", field, err)
		}
		o.Holder = hb
		if d := left[field].Val(); hb != "" && d > 0 {
			o.HeartbeatLeft = d
		}
		n, err := alive[rec.Instance].Result()
		if err != nil {
			return nil, fmt.Errorf("read liveness of %s: %w", rec.Instance, err)
		}
		o.OwnerAlive = n == 1
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out, nil
}
