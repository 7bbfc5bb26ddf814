// Package queue owns the Redis list job queue with reliable take: producers
// RPUSH, consumers take from the head (FIFO) by atomically moving the entry
// into their own processing list, and acknowledge it once handled. An entry
// is therefore always in exactly one list, so a consumer that crashes
// between take and ack loses nothing: Requeue moves its processing list back
// to the head of the queue.
//
// A queue may have several priority levels, one list each (lower numbers
// are served first; see Take for how lower levels are kept from starving),
// and a delayed set of entries that wait for a due time before they join
// their level (Delay, PromoteDue).
//
// A queue may also hold several pools, each with its own lists for the
// same levels: an entry waits in its pool's lists, and a consumer takes
// only from the pools it serves (Serving). The delayed set is shared.
//
// The queue knows nothing of what the payloads mean, with two exceptions:
// a payload that is a JSON object with a string "pool" field belongs to
// that pool (none, or "", means the default pool), and one with a numeric
// "priority" field to that level of its pool (a priority with no level, or
// none, means the default level). Push, Requeue and PromoteDue all place
// entries by that rule, so an entry keeps its pool and level across a
// crash or a delay. An entry naming a pool the queue does not hold (a
// replica whose config lacks the pool, as during a rolling deploy) is never
// placed in another pool's list, since only the named pool's replicas may
// run it: it goes to the delayed set instead, due UnknownPoolWait later,
// for a queue that holds the pool to promote (Unplaced counts them). Only
// a queue without a delayed set places it in the default pool. Payloads are compared byte
// for byte by Ack, so each should be unique (carry a request id).
//
// Every key of one queue is touched by multi-key Lua scripts: on Redis
// Cluster they must share a hash slot.
package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/redisconn"
)

// takeSlice bounds one blocking BLMOVE inside Take, so a cancelled context
// is noticed within takeSlice even though a blocking Redis command cannot be
// interrupted without dropping its connection (and perhaps its reply, and
// with it a taken entry). It must stay below the client's ReadTimeout
// (go-redis default 3s).
const takeSlice = 250 * time.Millisecond

// levelSlice is takeSlice for a queue with several levels: the blocking
// wait watches the default level only, so an entry pushed to another level
// of an idle queue waits at most this long.
const levelSlice = 100 * time.Millisecond

// DefaultLowerEvery is Options.LowerEvery's default: every 10th take serves
// a lower priority level first, so lower levels get at least a tenth of the
// takes while a higher one is flooded.
const DefaultLowerEvery = 10

// UnknownPoolWait is how long an entry naming a pool the queue does not
// hold waits in the delayed set before a queue tries to place it again:
// short, so a replica that holds the pool promotes it soon, and long enough
// that replicas without the pool do not spin on it.
const UnknownPoolWait = 5 * time.Second

// destination is the Lua shared by the scripts that place entries: it maps
// a payload to its pool's level's list by its JSON "pool" and "priority"
// fields, or to false and the pool's name when the payload names a pool
// the queue does not hold and park is true (the script then puts it in the
// delayed set). unknownPools, the scripts' reply tail, lists such pools.
//
//	KEYS[kbase+1] the default pool's default level; KEYS[kbase+2..] the other lists
//	ARGV[base+1] the default priority; ARGV[base+2] the default pool
//	ARGV[base+2i+1], ARGV[base+2i+2] the pool and priority of KEYS[kbase+1+i]
const destination = `
local dprio, dpool = tonumber(ARGV[base + 1]), ARGV[base + 2]
local levels = {[dpool] = {[dprio] = KEYS[kbase + 1]}}
for i = kbase + 2, #KEYS do
  local pool = ARGV[base + 2 * (i - kbase - 1) + 1]
  levels[pool] = levels[pool] or {}
  levels[pool][tonumber(ARGV[base + 2 * (i - kbase - 1) + 2])] = KEYS[i]
end
local function destination(v)
  local ok, d = pcall(cjson.decode, v)
  if not ok or type(d) ~= 'table' then return KEYS[kbase + 1] end
  local pool = levels[dpool]
  local name = d['pool']
  if type(name) == 'string' and name ~= '' then
    if levels[name] then pool = levels[name] elseif park then return false, name end
  end
  if type(d['priority']) == 'number' and pool[d['priority']] then return pool[d['priority']] end
  return pool[dprio] or KEYS[kbase + 1]
end
` + unknownPools

// unknownPools is the Lua that counts parked entries by the pool they name
// (count_unknown) and replies {moved, parked, pool, count, ...}
// (unknown_reply), so Queue.UnplacedByPool can tell which pools lack a
// queue here. At most maxUnplacedPools names are listed per reply.
const unknownPools = `
local unknown_names, unknown_counts = {}, {}
local function count_unknown(name)
  if unknown_counts[name] then
    unknown_counts[name] = unknown_counts[name] + 1
  elseif #unknown_names < 64 then
    unknown_names[#unknown_names + 1] = name
    unknown_counts[name] = 1
  end
end
local function unknown_reply(n, parked)
  local out = {n, parked}
  for _, name in ipairs(unknown_names) do
    out[#out + 1] = name
    out[#out + 1] = unknown_counts[name]
  end
  return out
end
`

// requeueScript moves every entry of a processing list back to the head of
// its level, keeping their order: the oldest taken entry ends up first. An
// entry of a pool the queue does not hold goes to the delayed set, due
// ARGV[1] ms after Redis's now.
//
//	KEYS[1] the processing list; KEYS[2] the delayed set
//	KEYS[3..], ARGV[2..]: as destination's
//	ARGV[1] the wait in ms, or -1 when the queue has no delayed set (KEYS[2]
//	is then KEYS[1] again, unused)
//
// Returns {entries moved to a list, entries moved to the delayed set,
// then unknownPools' pairs}.
var requeueScript = redis.NewScript(`local base, kbase = 1, 2
local park = tonumber(ARGV[1]) >= 0` + redisNow + destination + `
local n, parked = 0, 0
while true do
  local v = redis.call('LINDEX', KEYS[1], -1)
  if not v then break end
  local dst, unknown = destination(v)
  if dst then
    redis.call('LMOVE', KEYS[1], dst, 'RIGHT', 'LEFT')
    n = n + 1
  else
    redis.call('ZADD', KEYS[2], now + tonumber(ARGV[1]), v)
    redis.call('RPOP', KEYS[1])
    parked = parked + 1
    count_unknown(unknown)
  end
end
return unknown_reply(n, parked)
`)

// redisNow is the Lua prelude that reads the server's clock as unix ms
// into now. Every score of the delayed set is written and compared on it,
// so a replica whose wall clock is minutes off neither holds a retry back
// nor lets it out early. TIME before a write is allowed: scripts replicate
// their effects (the default since Redis 5, the only mode since 7).
const redisNow = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// delayScript adds an entry to the delayed set, due wait after Redis's now.
//
//	KEYS[1] the delayed set
//	ARGV[1] the wait in ms; ARGV[2] the entry
//
// Returns Redis's now.
const delaySrc = redisNow + `
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[2])
return now
`

var delayScript = redis.NewScript(delaySrc)

// makeDueScript makes entries of the delayed set due at Redis's now: ZADD
// XX LT only ever moves a due time earlier and never adds back an entry
// that was promoted meanwhile.
//
//	KEYS[1] the delayed set
//	ARGV    the entries
//
// Returns the number of entries whose due time moved.
var makeDueScript = redis.NewScript(redisNow + `
local n = 0
for _, v in ipairs(ARGV) do
  n = n + redis.call('ZADD', KEYS[1], 'XX', 'LT', 'CH', now, v)
end
return n
`)

// promoteScript moves entries of the delayed set that are due by Redis's
// clock to the tail of their level, oldest due first. An entry of a pool
// the queue does not hold stays in the set, due ARGV[2] ms after now.
//
//	KEYS[1] the delayed set (score: due time in unix ms, Redis's clock)
//	KEYS[2..], ARGV[3..]: as destination's
//	ARGV[1] at most this many entries; ARGV[2] the wait in ms
//
// Returns {entries moved to a list, entries left in the set, then
// unknownPools' pairs}.
var promoteScript = redis.NewScript(`local base, kbase, park = 2, 1, true` + redisNow + destination + `
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local n, parked = 0, 0
for _, v in ipairs(due) do
  local dst, unknown = destination(v)
  if dst then
    redis.call('RPUSH', dst, v)
    redis.call('ZREM', KEYS[1], v)
    n = n + 1
  else
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), v)
    parked = parked + 1
    count_unknown(unknown)
  end
end
return unknown_reply(n, parked)
`)

// takeFirstScript moves the head of the first non-empty list to the
// processing list: one round trip whatever the number of levels.
//
//	KEYS[1] the processing list; KEYS[2..] the lists in the order to try
//
// Returns {index of the list (1-based, of KEYS[2..]), entry} or nil.
var takeFirstScript = redis.NewScript(`
for i = 2, #KEYS do
  local v = redis.call('LMOVE', KEYS[i], KEYS[1], 'LEFT', 'RIGHT')
  if v then return {i - 1, v} end
end
return false
`)

// Level is one priority level's list of one pool.
type Level struct {
	Priority int
	Key      string
	// Pool is the pool the list belongs to (Options.DefaultPool for the
	// default pool's lists); NewWith sets it.
	Pool string
}

// Pool is one pool other than the default pool: its lists, one per level.
type Pool struct {
	Name string
	// Key is the pool's default level's list.
	Key string
	// Levels are the pool's other levels, as Options.Levels.
	Levels []Level
}

// Options configures a queue with priority levels and a delayed set.
type Options struct {
	// DefaultPriority is the level of Queue's own key, and of every entry
	// whose priority has no level.
	DefaultPriority int
	// Levels are the other levels, in any order; a level with
	// DefaultPriority is ignored (the default key serves it).
	Levels []Level
	// DelayedKey is the delayed set (keys.Delayed()); "" disables Delay.
	DelayedKey string
	// LowerEvery: every LowerEvery-th take tries a lower level before the
	// highest one, rotating through the lower levels. Default
	// DefaultLowerEvery; 1 would serve lower levels first all the time.
	LowerEvery int
	// DefaultPool names the pool of the queue's own key and Levels.
	DefaultPool string
	// Pools are the other pools; one named DefaultPool, or twice, is
	// ignored.
	Pools []Pool
}

// Queue is a handle on one Redis list queue. Its only state is the take
// counter behind the anti-starvation rotation; any number of Queues on the
// same keys may be used concurrently.
type Queue struct {
	rdb        redis.UniversalClient
	key        string
	levels     []Level // every pool's, sorted, highest priority (lowest number) first
	take       []Level // the levels Take serves (Serving), sorted as levels
	delayed    string
	lowerEvery uint64
	takes      atomic.Uint64
	defPrio    int
	defPool    string
	placeKeys  []string // default key, then the other lists' keys
	placeArgs  []any    // default priority and pool, then the pool and priority of each other list
	// unplaced counts entries put (back) in the delayed set because they
	// name a pool the queue does not hold; shared with Serving handles.
	unplaced *unplacedCounts
}

// New returns the single-level queue stored at key (keys.Queue()).
func New(rdb redis.UniversalClient, key string) *Queue {
	return NewWith(rdb, key, Options{})
}

// NewWith returns the queue whose default level is stored at key.
func NewWith(rdb redis.UniversalClient, key string, o Options) *Queue {
	q := &Queue{rdb: rdb, key: key, delayed: o.DelayedKey, lowerEvery: DefaultLowerEvery,
		defPrio: o.DefaultPriority, defPool: o.DefaultPool, unplaced: &unplacedCounts{}}
	if o.LowerEvery > 0 {
		q.lowerEvery = uint64(o.LowerEvery)
	}
	q.levels = []Level{{Priority: o.DefaultPriority, Key: key, Pool: o.DefaultPool}}
	q.placeKeys = []string{key}
	q.placeArgs = []any{o.DefaultPriority, o.DefaultPool}
	add := func(l Level) {
		if slices.ContainsFunc(q.levels, func(x Level) bool { return x.Pool == l.Pool && x.Priority == l.Priority }) {
			return
		}
		q.levels = append(q.levels, l)
		q.placeKeys = append(q.placeKeys, l.Key)
		q.placeArgs = append(q.placeArgs, l.Pool, l.Priority)
	}
	for _, l := range o.Levels {
		add(Level{Priority: l.Priority, Key: l.Key, Pool: o.DefaultPool})
	}
	for _, p := range o.Pools {
		if p.Name == o.DefaultPool || slices.ContainsFunc(q.levels, func(x Level) bool { return x.Pool == p.Name }) {
			continue
		}
		add(Level{Priority: o.DefaultPriority, Key: p.Key, Pool: p.Name})
		for _, l := range p.Levels {
			add(Level{Priority: l.Priority, Key: l.Key, Pool: p.Name})
		}
	}
	// Stable: at one priority the default pool's list comes first, then
	// the pools in the order given.
	slices.SortStableFunc(q.levels, func(a, b Level) int { return a.Priority - b.Priority })
	q.take = q.levels
	return q
}

// Serving returns a handle on the same queue whose Take serves only the
// given pools' lists (a consumer's consumer.pools); pools the queue does
// not hold are left out. Everything else (Push, Requeue, counts) still
// covers every pool, so a consumer hands back or retries a request of any
// pool into that pool's lists. The handle has its own take counter.
func (q *Queue) Serving(pools ...string) *Queue {
	s := &Queue{rdb: q.rdb, key: q.key, levels: q.levels, delayed: q.delayed, lowerEvery: q.lowerEvery,
		defPrio: q.defPrio, defPool: q.defPool, placeKeys: q.placeKeys, placeArgs: q.placeArgs, unplaced: q.unplaced}
	for _, l := range q.levels {
		if slices.Contains(pools, l.Pool) {
			s.take = append(s.take, l)
		}
	}
	return s
}

// Pools returns the queue's pools, the default pool first.
func (q *Queue) Pools() []string {
	out := []string{q.defPool}
	for _, l := range q.levels {
		if !slices.Contains(out, l.Pool) {
			out = append(out, l.Pool)
		}
	}
	return out
}

// Levels returns every pool's priority levels, highest priority first.
func (q *Queue) Levels() []Level { return slices.Clone(q.levels) }

// Lists returns every pool's every level's list key, highest priority
// first: what a reader of the whole queue (reconciler, operator tools)
// must look at.
func (q *Queue) Lists() []string { return listKeys(q.levels) }

func listKeys(ls []Level) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Key
	}
	return out
}

// DelayedKey is the delayed set's key ("" when the queue has none).
func (q *Queue) DelayedKey() string { return q.delayed }

// Unplaced is how many entries Push, Requeue and PromoteDue of this queue
// (and its Serving handles) have put in, or left in, the delayed set
// because they name a pool the queue does not hold. Such an entry waits
// for a replica whose config holds its pool; a count that keeps growing
// means no replica does, or this replica's config is behind.
func (q *Queue) Unplaced() uint64 {
	q.unplaced.mu.Lock()
	defer q.unplaced.mu.Unlock()
	return q.unplaced.total
}

// UnplacedByPool is Unplaced by the pool the entries name: a copy, the
// pool names as the payloads carry them (at most maxUnplacedPools of them;
// further pools count under "").
func (q *Queue) UnplacedByPool() map[string]uint64 {
	q.unplaced.mu.Lock()
	defer q.unplaced.mu.Unlock()
	return maps.Clone(q.unplaced.byPool)
}

// maxUnplacedPools bounds UnplacedByPool's pools: the names come from
// payloads.
const maxUnplacedPools = 64

// unplacedCounts backs Unplaced and UnplacedByPool.
type unplacedCounts struct {
	mu     sync.Mutex
	total  uint64
	byPool map[string]uint64
}

func (u *unplacedCounts) add(pool string, n uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.byPool == nil {
		u.byPool = map[string]uint64{}
	}
	if _, known := u.byPool[pool]; !known && len(u.byPool) >= maxUnplacedPools {
		pool = ""
	}
	u.total += n
	u.byPool[pool] += n
}

// placed reads a requeue or promote script's reply, {moved, parked, then
// pool and count pairs}, and counts the parked entries by pool.
func (q *Queue) placed(raw []any) (moved, parked int64, err error) {
	if len(raw) < 2 || len(raw)%2 != 0 {
		return 0, 0, fmt.Errorf("reply %v, want 2 counts and pool pairs", raw)
	}
	moved, ok1 := raw[0].(int64)
	parked, ok2 := raw[1].(int64)
	if !ok1 || !ok2 {
		return 0, 0, fmt.Errorf("reply %v, want 2 counts first", raw)
	}
	listed := int64(0)
	for i := 2; i+1 < len(raw); i += 2 {
		name, _ := raw[i].(string)
		n, _ := raw[i+1].(int64)
		q.unplaced.add(name, uint64(n))
		listed += n
	}
	if parked > listed { // past the script's bound of names
		q.unplaced.add("", uint64(parked-listed))
	}
	return moved, parked, nil
}

// parkWait is the wait, in ms, of an entry of a pool the queue does not
// hold, or -1 when the queue has no delayed set to park it in.
func (q *Queue) parkWait() int64 {
	if q.delayed == "" {
		return -1
	}
	return UnknownPoolWait.Milliseconds()
}

// levelKey is the list an entry belongs to, by destination's rule, or ""
// when it names a pool the queue does not hold and the queue has a delayed
// set to park it in.
func (q *Queue) levelKey(payload []byte) string {
	if len(q.levels) == 1 && q.delayed == "" {
		return q.key
	}
	var p struct {
		Pool     *string `json:"pool"`
		Priority *int    `json:"priority"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return q.key
	}
	pool := q.defPool
	if p.Pool != nil && *p.Pool != "" {
		switch {
		case slices.ContainsFunc(q.levels, func(l Level) bool { return l.Pool == *p.Pool }):
			pool = *p.Pool
		case q.delayed != "":
			return ""
		}
	}
	prio := q.defPrio
	if p.Priority != nil && slices.ContainsFunc(q.levels, func(l Level) bool { return l.Pool == pool && l.Priority == *p.Priority }) {
		prio = *p.Priority
	}
	for _, l := range q.levels {
		if l.Pool == pool && l.Priority == prio {
			return l.Key
		}
	}
	return q.key
}

// payloadPool is the "pool" field of a payload ("" without one).
func payloadPool(payload []byte) string {
	var p struct {
		Pool string `json:"pool"`
	}
	_ = json.Unmarshal(payload, &p) // levelKey parsed it already
	return p.Pool
}

// Push appends payload to the tail of its level (or, naming a pool the
// queue does not hold, puts it in the delayed set: see the package doc).
func (q *Queue) Push(ctx context.Context, payload []byte) error {
	if err := q.PushOn(ctx, q.rdb, payload).Err(); err != nil {
		key := q.levelKey(payload)
		if key == "" {
			key = q.delayed
		}
		return fmt.Errorf("queue push %s: %w", key, err)
	}
	return nil
}

// PushOn queues Push's command on c, a pipeline (or transaction) of the
// queue's client, so a caller can send the push in a round trip it makes
// anyway (the claim sends it with its lock release). The result is known
// once c is executed.
func (q *Queue) PushOn(ctx context.Context, c redis.Cmdable, payload []byte) redis.Cmder {
	key := q.levelKey(payload)
	if key != "" {
		return c.RPush(ctx, key, payload)
	}
	q.unplaced.add(payloadPool(payload), 1)
	// EVAL, not EVALSHA: in a pipeline a NOSCRIPT reply comes too late to
	// retry.
	return c.Eval(ctx, delaySrc, []string{q.delayed}, q.parkWait(), payload)
}

// Take atomically moves the head of the queue to the tail of processingKey
// and returns it, blocking up to wait for an entry; wait <= 0 does not
// block. It returns (nil, nil) when no entry came within wait, and ctx.Err()
// within a fraction of a second of ctx being cancelled. An entry taken in
// the same instant the context ends is still returned (with a nil error):
// it is in processingKey and the caller owns it.
//
// Take serves the lists of the pools the handle serves (Serving; every
// pool's for a handle from NewWith). With one list this is BLMOVE list
// processingKey LEFT RIGHT. With several, each try is one script that
// LMOVEs from the first non-empty list in priority order, and, when all
// are empty, a BLMOVE on one served pool's default level (waitKey) waits
// up to levelSlice before the next try. The trade-off: BLMPOP could
// wait on every level at once but only pops (a crash after it would lose
// the entry), so an idle queue notices an entry pushed to another list
// (another level, another pool) up to levelSlice late. Every LowerEvery-th take starts with a lower
// level instead (rotating through them), so a flooded high level cannot
// starve the others: the head of a lower level is taken within
// LowerEvery × (levels − 1) takes of this Queue.
func (q *Queue) Take(ctx context.Context, processingKey string, wait time.Duration) ([]byte, error) {
	switch {
	case len(q.take) == 0:
		return q.idle(ctx, wait)
	case len(q.take) > 1:
		return q.takeLevels(ctx, processingKey, wait)
	}
	deadline := time.Now().Add(wait)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		left := time.Until(deadline)
		b, err := q.blmove(ctx, q.take[0].Key, processingKey, min(left, takeSlice))
		switch {
		case err != nil || b != nil:
			return b, err
		case left <= takeSlice:
			return nil, ctx.Err()
		}
	}
}

func (q *Queue) takeLevels(ctx context.Context, processingKey string, wait time.Duration) ([]byte, error) {
	deadline := time.Now().Add(wait)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		order := q.order(q.takes.Load() + 1)
		res, err := takeFirstScript.Run(ctx, q.rdb, append([]string{processingKey}, order...)).Slice()
		switch {
		case err == nil && len(res) == 2:
			q.takes.Add(1)
			s, _ := res[1].(string)
			return []byte(s), nil
		case err != nil && !errors.Is(err, redis.Nil):
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("queue take: %w", err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, ctx.Err()
		}
		b, err := q.blmove(ctx, q.waitKey(), processingKey, min(left, levelSlice))
		if err != nil || b != nil {
			if b != nil {
				q.takes.Add(1)
			}
			return b, err
		}
	}
}

// idle is Take of a handle that serves no list: nothing comes within wait.
func (q *Queue) idle(ctx context.Context, wait time.Duration) ([]byte, error) {
	t := time.NewTimer(max(wait, 0))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return nil, ctx.Err()
}

// waitKey is the list an idle Take blocks on: the default level (where
// most entries arrive) of the pool of the first list it serves.
func (q *Queue) waitKey() string {
	for _, l := range q.take {
		if l.Pool == q.take[0].Pool && l.Priority == q.defPrio {
			return l.Key
		}
	}
	return q.take[0].Key
}

// order is the order in which take number n tries the served lists.
func (q *Queue) order(n uint64) []string {
	keys := listKeys(q.take)
	if n%q.lowerEvery != 0 {
		return keys
	}
	start := 1 + int((n/q.lowerEvery-1)%uint64(len(keys)-1))
	return append(keys[start:], keys[:start]...)
}

// blmove is one (B)LMOVE from src to dst waiting up to d; (nil, nil) when
// src stayed empty.
func (q *Queue) blmove(ctx context.Context, src, dst string, d time.Duration) ([]byte, error) {
	var cmd *redis.Cmd
	if ms := d.Milliseconds(); ms < 1 {
		// Never BLMOVE with timeout 0: that blocks forever.
		cmd = q.rdb.Do(ctx, "lmove", src, dst, "LEFT", "RIGHT")
	} else {
		// BLMOVE takes fractional seconds; go-redis's BLMove would round
		// sub-second timeouts up to 1s.
		cmd = q.rdb.Do(ctx, "blmove", src, dst, "LEFT", "RIGHT", strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64))
	}
	s, err := cmd.Text()
	switch {
	case err == nil:
		return []byte(s), nil
	case errors.Is(err, redis.Nil):
		return nil, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	return nil, fmt.Errorf("queue take %s: %w", src, err)
}

// Ack removes payload from processingKey once it has been handled. Acking an
// entry that is no longer there (requeued meanwhile) is not an error.
func (q *Queue) Ack(ctx context.Context, processingKey string, payload []byte) error {
	if err := q.rdb.LRem(ctx, processingKey, 1, payload).Err(); err != nil {
		return fmt.Errorf("queue ack %s: %w", processingKey, err)
	}
	return nil
}

// Requeue moves every entry of processingKey back to the head of its level
// in one atomic step, preserving their order, and returns how many it moved
// (an entry of a pool the queue does not hold goes to the delayed set, and
// counts: it left processingKey).
// It is how a restarted consumer, or the repair of a dead one, gets taken
// but unacknowledged entries processed again.
func (q *Queue) Requeue(ctx context.Context, processingKey string) (int, error) {
	parkKey := q.delayed
	if parkKey == "" {
		parkKey = processingKey
	}
	ks := append([]string{processingKey, parkKey}, q.placeKeys...)
	raw, err := requeueScript.Run(ctx, q.rdb, ks, append([]any{q.parkWait()}, q.placeArgs...)...).Slice()
	var moved, parked int64
	if err == nil {
		moved, parked, err = q.placed(raw)
	}
	if err != nil {
		return 0, fmt.Errorf("queue requeue %s: %w", processingKey, err)
	}
	return int(moved + parked), nil
}

// Len is the number of entries waiting on every level (not those taken or
// delayed).
func (q *Queue) Len(ctx context.Context) (int64, error) {
	cmds := make([]*redis.IntCmd, len(q.levels))
	if _, err := q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, l := range q.levels {
			cmds[i] = p.LLen(ctx, l.Key)
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("queue len: %w", err)
	}
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
	return n, nil
}

// Entries returns the waiting entries of every level, highest priority
// level first, each level head first.
func (q *Queue) Entries(ctx context.Context) ([][]byte, error) {
	var out [][]byte
	for _, l := range q.levels {
		e, err := q.lrange(ctx, l.Key)
		if err != nil {
			return nil, err
		}
		out = append(out, e...)
	}
	return out, nil
}

// ProcessingKeys returns the processing lists matching pattern
// (keys.ProcessingPattern()), found with SCAN so a large keyspace is not
// blocked; on a cluster every master is scanned.
func (q *Queue) ProcessingKeys(ctx context.Context, pattern string) ([]string, error) {
	ks, err := redisconn.ScanKeys(ctx, q.rdb, pattern)
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	return ks, nil
}

// ProcessingEntries returns the entries of processingKey, oldest take first.
func (q *Queue) ProcessingEntries(ctx context.Context, processingKey string) ([][]byte, error) {
	return q.lrange(ctx, processingKey)
}

func (q *Queue) lrange(ctx context.Context, key string) ([][]byte, error) {
	vals, err := q.rdb.LRange(ctx, key, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("queue lrange %s: %w", key, err)
	}
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = []byte(v)
	}
	return out, nil
}
