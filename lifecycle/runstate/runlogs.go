package runstate

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// RunLog is where an attempt's output was kept: recorded in Redis
// (keys.RunLogs) so agentsmithctl logs and the status page can find the
// replica and file. Run numbers the ticket's runs: an operator's retry
// starts the attempts over at 1 in a new run, so (Run, Attempt) names one
// attempt. A record without a run (written before runs were numbered) is
// run 1.
type RunLog struct {
	Run      int       `json:"run,omitempty"`
	Attempt  int       `json:"attempt"`
	Instance string    `json:"instance"`
	Path     string    `json:"path"`
	Started  time.Time `json:"started"`
}

// RecordRunLog stores rl under the ticket's run logs, which expire
// keys.FinishedTTL after the last attempt recorded, like the ticket's other
// history.
func RecordRunLog(ctx context.Context, rdb redis.UniversalClient, ref platforms.Ref, rl RunLog) error {
	b, err := json.Marshal(rl)
	if err != nil {
		return fmt.Errorf("record run log of %s: %w", ref, err)
	}
	key := keys.RunLogs(ref.Key())
	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, runLogField(rl), b)
		p.Expire(ctx, key, keys.FinishedTTL)
		return nil
	})
	if err != nil {
		return fmt.Errorf("record run log of %s: %w", ref, err)
	}
	return nil
}

// runLogField is rl's field in the hash: the attempt number alone for run
// 1, which is the field records without a run have, and "{run}-{attempt}"
// for a later run, so a retry's attempt 1 never replaces the record of an
// earlier run's attempt 1.
func runLogField(rl RunLog) string {
	if rl.Run <= 1 {
		return strconv.Itoa(rl.Attempt)
	}
	return strconv.Itoa(rl.Run) + "-" + strconv.Itoa(rl.Attempt)
}

// NextRun is the run an attempt numbered attempt belongs to, given the
// ticket's recorded logs rls (as RunLogs returns them): the last recorded
// run while attempt goes on past its last attempt, else the run after it
// (an operator's retry starts over at attempt 1). With nothing recorded it
// is run 1.
func NextRun(rls []RunLog, attempt int) int {
	if len(rls) == 0 {
		return 1
	}
	last := rls[len(rls)-1]
	if attempt > last.Attempt {
		return last.Run
	}
	return last.Run + 1
}

// RunLogs reads a ticket's recorded attempt logs, oldest run and attempt
// first, each with its Run set (1 for a record without one). Entries that
// do not decode are skipped.
func RunLogs(ctx context.Context, rdb redis.UniversalClient, ref platforms.Ref) ([]RunLog, error) {
	m, err := rdb.HGetAll(ctx, keys.RunLogs(ref.Key())).Result()
	if err != nil {
		return nil, fmt.Errorf("read run logs of %s: %w", ref, err)
	}
	out := make([]RunLog, 0, len(m))
	for _, v := range m {
		var rl RunLog
		if json.Unmarshal([]byte(v), &rl) == nil {
			rl.Run = max(rl.Run, 1)
			out = append(out, rl)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Run != out[j].Run {
			return out[i].Run < out[j].Run
		}
		return out[i].Attempt < out[j].Attempt
	})
	return out, nil
}
