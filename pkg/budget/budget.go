// Package budget keeps each tracker token's rate-limit quota in Redis, so
// every replica using the token sees what any of them last heard from the
// tracker: a refusal one replica got holds the others' requests without a
// call, and the quota's low end is left to high-priority callers (claims,
// run transitions) on every replica at once. It implements
// trackerhttp.SharedBudget; the transport decides, this package stores.
package budget

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
)

// Redis is a trackerhttp.SharedBudget in Redis.
type Redis struct {
	rdb   redis.UniversalClient
	clock func() time.Time
	// serverTime dates pace entries by Redis's TIME rather than the
	// caller's clock: one clock for every replica.
	serverTime bool
	// seq makes pace entries unique within a replica; a random nonce
	// across replicas.
	seq atomic.Int64
}

var _ trackerhttp.SharedBudget = (*Redis)(nil)

// New shares budgets through rdb. clock is the time the quotas' resets are
// compared with to expire them (the transport's clock) and the time pace
// entries are dated by; nil means time.Now for the quotas and Redis's TIME
// for pacing, so replicas whose clocks disagree still count one sliding
// window (a replica ahead would otherwise drop the others' entries as
// old). Tests pass the fake clock their transport runs on.
func New(rdb redis.UniversalClient, clock func() time.Time) *Redis {
	serverTime := clock == nil
	if clock == nil {
		clock = time.Now
	}
	return &Redis{rdb: rdb, clock: clock, serverTime: serverTime}
}

// maxTTL bounds how long a quota is kept: GitHub's longest window is an
// hour; a reset or hold further out than this is not believed.
const maxTTL = 2 * time.Hour

// storeScript merges one answer into a token's quota.
//
// KEYS[1] the budget hash (keys.RateBudget)
// ARGV[1] remaining (-1: not named)   ARGV[2] limit (-1: not named)
// ARGV[3] reset, unix ms (0: none)    ARGV[4] hold, unix ms (0: none)
// ARGV[5] now, unix ms                ARGV[6] max TTL, ms
//
// The later hold wins. A reset later than the stored one starts a new
// window (its remaining replaces the old); within the same window the
// lower remaining wins, since answers from several replicas arrive out of
// order; an earlier window's answer is stale and leaves remaining alone.
// The key expires at the later of reset and hold (at most max TTL out),
// set relative to the caller's now (PEXPIRE), so a replica's clock is
// the only clock involved.
// Returns 1.
var storeScript = redis.NewScript(`
local rem, lim, reset, hold = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local now, maxttl = tonumber(ARGV[5]), tonumber(ARGV[6])
local cur = redis.call('HMGET', KEYS[1], 'remaining', 'limit', 'reset', 'hold')
local crem, creset, chold = tonumber(cur[1]), tonumber(cur[3]) or 0, tonumber(cur[4]) or 0
if hold > chold then redis.call('HSET', KEYS[1], 'hold', hold); chold = hold end
if rem >= 0 and reset > 0 then
  if reset > creset or crem == nil then
    redis.call('HSET', KEYS[1], 'remaining', rem, 'reset', reset)
    creset = reset
  elseif reset == creset and rem < crem then
    redis.call('HSET', KEYS[1], 'remaining', rem)
  end
end
if lim > 0 then redis.call('HSET', KEYS[1], 'limit', lim) end
local expat = math.max(creset, chold)
if expat <= now then expat = now + 1000 end
if expat > now + maxttl then expat = now + maxttl end
redis.call("PEXPIRE", KEYS[1], math.floor(expat - now))
return 1
`)

// Store merges q into key's quota (storeScript).
func (b *Redis) Store(ctx context.Context, key string, q trackerhttp.Quota) error {
	ms := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.UnixMilli()
	}
	err := storeScript.Run(ctx, b.rdb, []string{keys.RateBudget(key)},
		q.Remaining, q.Limit, ms(q.Reset), ms(q.Hold), b.clock().UnixMilli(), maxTTL.Milliseconds()).Err()
	if err != nil {
		return fmt.Errorf("budget: store: %w", err)
	}
	return nil
}

// Load reads key's quota; an unknown key is a quota nobody has heard of.
func (b *Redis) Load(ctx context.Context, key string) (trackerhttp.Quota, error) {
	q := trackerhttp.Quota{Remaining: -1, Limit: -1}
	vals, err := b.rdb.HMGet(ctx, keys.RateBudget(key), "remaining", "limit", "reset", "hold").Result()
	if err != nil {
		return q, fmt.Errorf("budget: load: %w", err)
	}
	num := func(v any) (int64, bool) {
		s, ok := v.(string)
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	}
	if n, ok := num(vals[0]); ok {
		q.Remaining = int(n)
	}
	if n, ok := num(vals[1]); ok {
		q.Limit = int(n)
	}
	if n, ok := num(vals[2]); ok && n > 0 {
		q.Reset = time.UnixMilli(n)
	}
	if n, ok := num(vals[3]); ok && n > 0 {
		q.Hold = time.UnixMilli(n)
	}
	return q, nil
}

var _ trackerhttp.Pacer = (*Redis)(nil)

// paceScript takes cost from a sliding-window limit if every window has
// room.
//
// KEYS[1] the usage sorted set (keys.RatePace): members "cost:id", scored
// by unix ms
// ARGV[1] now, unix ms (0: Redis's TIME)   ARGV[2] cost   ARGV[3] a unique member id
// ARGV[4] the longest window, ms   ARGV[5…] pairs of max, window ms
//
// Entries older than the longest window are dropped. For each window the
// costs of the entries inside it are summed; one without room for cost
// gives the wait until enough of its oldest entries leave it. Returns 0
// after recording cost, or the longest such wait in ms (nothing recorded).
var paceScript = redis.NewScript(`
local now, cost, longest = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4])
if now == 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - longest)
local wait = 0
for i = 5, #ARGV, 2 do
  local max, per = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
  local e = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. (now - per), '+inf', 'WITHSCORES')
  local sum = 0
  for j = 1, #e, 2 do sum = sum + tonumber(string.match(e[j], '^(%d+):')) end
  if sum + cost > max then
    local freed, w = 0, per
    for j = 1, #e, 2 do
      freed = freed + tonumber(string.match(e[j], '^(%d+):'))
      if sum - freed + cost <= max then w = tonumber(e[j + 1]) + per - now; break end
    end
    if w > wait then wait = w end
  end
end
if wait > 0 then return wait end
redis.call('ZADD', KEYS[1], now, cost .. ':' .. ARGV[3])
redis.call('PEXPIRE', KEYS[1], longest)
return 0
`)

// Take records cost under key's secondary-limit usage when every window
// has room (paceScript), else says how long until one would. now dates
// the entry only when New was given a clock; otherwise Redis's TIME does.
func (b *Redis) Take(ctx context.Context, key string, cost int, windows []trackerhttp.Window, now time.Time) (time.Duration, error) {
	if len(windows) == 0 {
		return 0, nil
	}
	longest := time.Duration(0)
	at := now.UnixMilli()
	if b.serverTime {
		at = 0
	}
	args := []any{at, cost, "", 0}
	for _, w := range windows {
		if cost > w.Max {
			return 0, fmt.Errorf("budget: pace: cost %d exceeds a window's %d", cost, w.Max)
		}
		longest = max(longest, w.Per)
		args = append(args, w.Max, w.Per.Milliseconds())
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	args[2] = strconv.FormatInt(b.seq.Add(1), 10) + "." + hex.EncodeToString(nonce[:])
	args[3] = longest.Milliseconds()
	ms, err := paceScript.Run(ctx, b.rdb, []string{keys.RatePace(key)}, args...).Int64()
	if err != nil {
		return 0, fmt.Errorf("budget: pace: %w", err)
	}
	return time.Duration(ms) * time.Millisecond, nil
}
