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
}

// takeRunScript takes a ticket's run: the heartbeat key doubles as the run
// lock, so two requests for one ticket can never both run, even on trackers
// without conditional writes.
//
//	KEYS[1] heartbeat key of the ticket
//	KEYS[2] in-flight index (hash)
//	KEYS[3] attempts hash
//	ARGV[1] owner token
//	ARGV[2] heartbeat TTL in milliseconds
//	ARGV[3] ticket key (hash field)
//	ARGV[4] RunRecord JSON
//	ARGV[5] attempt
//
// Returns 1 when taken, 0 when another run holds the heartbeat.
var takeRunScript = redis.NewScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('HSET', KEYS[2], ARGV[3], ARGV[4])
  redis.call('HSET', KEYS[3], ARGV[3], ARGV[5])
  return 1
end
return 0
`)

// releaseRunScript ends a run: it deletes the heartbeat and the in-flight
// entry, each only if it still belongs to the given token, so a run that
// lost its ownership can never free its successor's.
//
//	KEYS[1] heartbeat key
//	KEYS[2] in-flight index
//	KEYS[3] attempts hash
//	KEYS[4] cancel request of the ticket
//	ARGV[1] owner token
//	ARGV[2] ticket key (hash field)
//	ARGV[3] "1" to also forget the attempt count and any cancel request (the
//	        ticket reached a terminal state)
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
  redis.call('DEL', KEYS[4])
end
return mine
`)

// TakeRun records rec as the owner of its ticket's run.
func TakeRun(ctx context.Context, rdb redis.Scripter, rec RunRecord, ttl time.Duration) (bool, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return false, fmt.Errorf("take run: %w", err)
	}
	k := rec.Ref.Key()
	n, err := takeRunScript.Run(ctx, rdb, []string{keys.Heartbeat(k), keys.Inflight(), keys.Attempts()},
		rec.Token, ttl.Milliseconds(), k, string(b), rec.Attempt).Int()
	if err != nil {
		return false, fmt.Errorf("take run %s: %w", k, err)
	}
	return n == 1, nil
}

// ReleaseRun ends the run owned by token; terminal forgets the attempt count
// and any cancel request.
func ReleaseRun(ctx context.Context, rdb redis.Scripter, ref platforms.Ref, token string, terminal bool) (bool, error) {
	k := ref.Key()
	flag := "0"
	if terminal {
		flag = "1"
	}
	n, err := releaseRunScript.Run(ctx, rdb, []string{keys.Heartbeat(k), keys.Inflight(), keys.Attempts(), keys.Cancel(k)},
		token, k, flag).Int()
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
	n, err := rdb.HGet(ctx, keys.Attempts(), ref.Key()).Int()
	if err == redis.Nil {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read attempts of %s: %w", ref, err)
	}
	return n, nil
}
