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
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Outcome is what a run's pipeline ended with, recorded in Redis (the
// keys.Outcomes hash, field = ticket key) the moment it ended and before
// any tracker call: the final write (comment, escalation label, transition
// to Done or Failed) is made from it, by the run itself or, once the run
// gave up on an unreachable tracker or died, by whoever adopts the record
// (lifecycle.OutcomeFinisher). While it exists no run of the ticket can be
// taken (Take answers Held), so a pipeline that ended is never run again
// for want of a label. What the fields mean (which states, which outcome)
// is the lifecycle's business.
type Outcome struct {
	Ref platforms.Ref `json:"ref"`
	// Token is the run's owner token, Instance the replica that ran it.
	Token     string `json:"token"`
	Instance  string `json:"instance"`
	RequestID string `json:"request_id"`
	Source    string `json:"source,omitempty"`
	Attempt   int    `json:"attempt"`
	// To is the state the ticket moves to ("done", "failed"); Outcome and
	// Reason describe the transition for the history.
	To      string `json:"to"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
	// Body is the comment, already redacted and cut to the tracker's limit,
	// Short its replacement when the tracker refuses it; "" posts none.
	// CommentPosted is set once it was posted, so no finisher posts it twice.
	Body          string `json:"body,omitempty"`
	Short         string `json:"short,omitempty"`
	CommentPosted bool   `json:"comment_posted,omitempty"`
	// EscalateLabel is added before the transition when set.
	EscalateLabel string `json:"escalate_label,omitempty"`
	// Branch and Commit are the work branch and the commit the run pushed
	// ("" without a workspace or a push).
	Branch string `json:"branch,omitempty"`
	Commit string `json:"commit,omitempty"`
	// Started is when the pipeline started, Recorded when it ended and this
	// record was written; EnqueuedAt and ClaimedAt are the request's.
	Started    time.Time `json:"started"`
	Recorded   time.Time `json:"recorded"`
	EnqueuedAt time.Time `json:"enqueued_at,omitzero"`
	ClaimedAt  time.Time `json:"claimed_at,omitzero"`
	// Tries counts the finishers' attempts at the final write after the run
	// handed it over; LastError is the last one's error.
	Tries     int    `json:"tries,omitempty"`
	LastError string `json:"last_error,omitempty"`
}

// Age is how long o has waited at now.
func (o Outcome) Age(now time.Time) time.Duration { return max(now.Sub(o.Recorded), 0) }

// putOutcomeScript writes an outcome record, fenced by the run lock: only
// the run that holds the ticket's heartbeat may record or change it.
//
//	KEYS[1]  heartbeat key of the ticket
//	KEYS[2]  outcomes hash
//	ARGV[1]  token that must hold the heartbeat
//	ARGV[2]  ticket key (hash field)
//	ARGV[3]  Outcome JSON
//
// Returns 1 when written, 0 when the heartbeat is not the token's.
var putOutcomeScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
return 1
`)

// dropOutcomeScript deletes an outcome record, fenced like putOutcomeScript
// (same KEYS and ARGV[1..2]). Returns 1 when the heartbeat was the
// token's (the record is gone), else 0.
var dropOutcomeScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('HDEL', KEYS[2], ARGV[2])
return 1
`)

// adoptOutcomeScript gives a waiting outcome to a finisher: it takes the
// ticket's run lock with the finisher's token, when the lock is free or
// still held by the dead or departed run named in ARGV[2].
//
//	KEYS[1]  heartbeat key of the ticket
//	KEYS[2]  outcomes hash
//	ARGV[1]  the finisher's token
//	ARGV[2]  the token the lock may still hold ("" : it must be free)
//	ARGV[3]  ticket key (hash field)
//	ARGV[4]  heartbeat TTL in milliseconds
//
// Returns 1 when adopted, 0 when another token holds the lock, 2 when no
// outcome waits any more.
var adoptOutcomeScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[2] then
  return 0
end
if redis.call('HEXISTS', KEYS[2], ARGV[3]) == 0 then
  return 2
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[4])
return 1
`)

// PutOutcome records o under the run lock held by holder: o.Token for the
// run itself, a finisher's token once adopted. false means holder no
// longer holds the ticket's run and nothing was written.
func PutOutcome(ctx context.Context, rdb redis.Scripter, holder string, o Outcome) (bool, error) {
	k := o.Ref.Key()
	b, err := json.Marshal(o)
	if err != nil {
		return false, fmt.Errorf("record outcome of %s: %w", k, err)
	}
	n, err := putOutcomeScript.Run(ctx, rdb, []string{keys.Heartbeat(k), keys.Outcomes()}, holder, k, string(b)).Int()
	if err != nil {
		return false, fmt.Errorf("record outcome of %s: %w", k, err)
	}
	return n == 1, nil
}

// DropOutcome deletes ref's outcome record once its final write is done (or
// has nothing left to write), if holder still holds the ticket's run.
func DropOutcome(ctx context.Context, rdb redis.Scripter, ref platforms.Ref, holder string) (bool, error) {
	k := ref.Key()
	n, err := dropOutcomeScript.Run(ctx, rdb, []string{keys.Heartbeat(k), keys.Outcomes()}, holder, k).Int()
	if err != nil {
		return false, fmt.Errorf("drop outcome of %s: %w", k, err)
	}
	return n == 1, nil
}

// Adoption is how AdoptOutcome ended.
type Adoption int

// AdoptOutcome's results.
const (
	Adopted  Adoption = iota // the finisher holds the run lock now
	Busy                     // another token holds it
	Finished                 // no outcome waits any more
)

// AdoptOutcome takes ref's run lock for a finisher's token for ttl, when the
// lock is free or held by departed (the dead run's token; "" when only a
// free lock may be taken) and an outcome still waits.
func AdoptOutcome(ctx context.Context, rdb redis.Scripter, ref platforms.Ref, token, departed string, ttl time.Duration) (Adoption, error) {
	k := ref.Key()
	n, err := adoptOutcomeScript.Run(ctx, rdb, []string{keys.Heartbeat(k), keys.Outcomes()}, token, departed, k, ttl.Milliseconds()).Int()
	if err != nil {
		return Busy, fmt.Errorf("adopt outcome of %s: %w", k, err)
	}
	switch n {
	case 1:
		return Adopted, nil
	case 2:
		return Finished, nil
	}
	return Busy, nil
}

// OutcomeOf reads ref's outcome record; false when none waits (or it does
// not decode).
func OutcomeOf(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref) (Outcome, bool, error) {
	raw, err := rdb.HGet(ctx, keys.Outcomes(), ref.Key()).Result()
	if errors.Is(err, redis.Nil) {
		return Outcome{}, false, nil
	}
	if err != nil {
		return Outcome{}, false, fmt.Errorf("read outcome of %s: %w", ref, err)
	}
	var o Outcome
	if err := json.Unmarshal([]byte(raw), &o); err != nil {
		return Outcome{}, false, nil
	}
	return o, true, nil
}

// OutcomeWaits reports whether an outcome record waits for ref: a run
// whose pipeline ended, not a dead one, which no repair may revert.
func OutcomeWaits(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref) (bool, error) {
	ok, err := rdb.HExists(ctx, keys.Outcomes(), ref.Key()).Result()
	if err != nil {
		return false, fmt.Errorf("read outcome of %s: %w", ref, err)
	}
	return ok, nil
}

// ReadOutcomes reads every waiting outcome, oldest first, and names the
// fields whose record does not decode; it writes nothing (status, metrics).
func ReadOutcomes(ctx context.Context, rdb redis.Cmdable) (out []Outcome, undecodable []string, err error) {
	raw, err := rdb.HGetAll(ctx, keys.Outcomes()).Result()
	if err != nil {
		return nil, nil, fmt.Errorf("read outcomes: %w", err)
	}
	out = make([]Outcome, 0, len(raw))
	for field, v := range raw {
		var o Outcome
		if err := json.Unmarshal([]byte(v), &o); err != nil || o.Ref.ID == "" {
			undecodable = append(undecodable, field)
			continue
		}
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Recorded.Before(out[j].Recorded) })
	return out, undecodable, nil
}

// Outcomes is ReadOutcomes for the finisher: records that do not decode
// are deleted, since no finisher could write them and they would hold
// their ticket's run forever.
func Outcomes(ctx context.Context, rdb redis.Cmdable) ([]Outcome, error) {
	out, junk, err := ReadOutcomes(ctx, rdb)
	if err != nil {
		return nil, err
	}
	if len(junk) > 0 {
		if err := rdb.HDel(ctx, keys.Outcomes(), junk...).Err(); err != nil {
			return out, fmt.Errorf("delete undecodable outcomes: %w", err)
		}
	}
	return out, nil
}
