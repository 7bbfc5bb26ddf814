package runstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// ManyBatch is how many tickets InspectMany reads per round trip. A pipeline
// of 4×ManyBatch commands is a few hundred KiB on the wire at most, so a
// slow cycle over 100k tickets takes tens of round trips instead of one per
// ticket, without one reply holding Redis (single-threaded) for long.
const ManyBatch = 1000

// Seen is one ticket's run state as InspectMany read it.
type Seen struct {
	// Running is what Running returns: a run holds the ticket's heartbeat
	// or its last run's outcome waits to be written.
	Running bool
	// LastAttempt is the attempt of its last run: what LastAttempt
	// returns or, when more, the attempt of the ticket's in-flight record
	// (a run that reset the count before a stage's label write and died
	// before that write, ResetAttempts).
	LastAttempt int
}

// InspectMany reads, for every ref, what Running and LastAttempt would
// return (with the in-flight record's attempt: Seen.LastAttempt), in one
// round trip per ManyBatch tickets: the slow housekeeping cycles list
// thousands of tickets and must not make a round trip per ticket. The answer is in refs' order. Like Inspect it is not atomic: a
// caller that acts on a ticket re-reads its state under the claim lock.
func InspectMany(ctx context.Context, rdb redis.Cmdable, refs []platforms.Ref) ([]Seen, error) {
	out := make([]Seen, len(refs))
	for lo := 0; lo < len(refs); lo += ManyBatch {
		hi := min(lo+ManyBatch, len(refs))
		hb := make([]*redis.IntCmd, hi-lo)
		ow := make([]*redis.BoolCmd, hi-lo)
		at := make([]*redis.StringCmd, hi-lo)
		rc := make([]*redis.StringCmd, hi-lo)
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, ref := range refs[lo:hi] {
				k := ref.Key()
				hb[i] = p.Exists(ctx, keys.Heartbeat(k))
				ow[i] = p.HExists(ctx, keys.Outcomes(), k)
				at[i] = p.HGet(ctx, keys.Attempts(), k)
				rc[i] = p.HGet(ctx, keys.Inflight(), k)
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("read heartbeats and attempts of %d tickets: %w", hi-lo, err)
		}
		for i := range hb {
			ref := refs[lo+i]
			n, err := hb[i].Result()
			if err != nil {
				return nil, fmt.Errorf("read heartbeat of %s: %w", ref, err)
			}
			waits, err := ow[i].Result()
			if err != nil {
				return nil, fmt.Errorf("read outcome of %s: %w", ref, err)
			}
			last, err := at[i].Int()
			if errors.Is(err, redis.Nil) {
				last, err = 0, nil
			}
			if err != nil {
				return nil, fmt.Errorf("read attempts of %s: %w", ref, err)
			}
			var rec Record
			if raw, err := rc[i].Result(); err == nil && json.Unmarshal([]byte(raw), &rec) == nil {
				last = max(last, rec.Attempt)
			}
			out[lo+i] = Seen{Running: n == 1 || waits, LastAttempt: last}
		}
	}
	return out, nil
}
