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
// replica and file.
type RunLog struct {
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
		p.HSet(ctx, key, strconv.Itoa(rl.Attempt), b)
		p.Expire(ctx, key, keys.FinishedTTL)
		return nil
	})
	if err != nil {
		return fmt.Errorf("record run log of %s: %w", ref, err)
	}
	return nil
}

// RunLogs reads a ticket's recorded attempt logs, oldest attempt first.
// Entries that do not decode are skipped.
func RunLogs(ctx context.Context, rdb redis.UniversalClient, ref platforms.Ref) ([]RunLog, error) {
	m, err := rdb.HGetAll(ctx, keys.RunLogs(ref.Key())).Result()
	if err != nil {
		return nil, fmt.Errorf("read run logs of %s: %w", ref, err)
	}
	out := make([]RunLog, 0, len(m))
	for _, v := range m {
		var rl RunLog
		if json.Unmarshal([]byte(v), &rl) == nil {
			out = append(out, rl)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Attempt < out[j].Attempt })
	return out, nil
}
