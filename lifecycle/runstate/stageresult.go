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

// StageResult is what a finished stage hands the next one: its name and
// the result its pipeline wrote, as JSON (bounded by the consumer's
// reading of the result file).
type StageResult struct {
	Stage  string          `json:"stage"`
	Result json.RawMessage `json:"result"`
}

// putStageResultScript writes the stage result only while the run lock
// holds the run's token: a run that lost its ticket hands nothing over.
//
//	KEYS[1]  the ticket's run lock (keys.Heartbeat)
//	KEYS[2]  the ticket's stage result (keys.StageResult)
//	ARGV[1]  the run's token
//	ARGV[2]  the record (JSON)
//	ARGV[3]  TTL in milliseconds
var putStageResultScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
return 1
`)

// PutStageResult records r as the ticket's last stage result for
// keys.StageResultTTL, fenced by the run's token. It reports whether it
// was written (false: the run no longer holds the ticket).
func PutStageResult(ctx context.Context, rdb redis.Scripter, ref platforms.Ref, token string, r StageResult) (bool, error) {
	k := ref.Key()
	b, err := json.Marshal(r)
	if err != nil {
		return false, fmt.Errorf("record stage result of %s: %w", ref, err)
	}
	n, err := putStageResultScript.Run(ctx, rdb, []string{keys.Heartbeat(k), keys.StageResult(k)}, token, string(b),
		keys.StageResultTTL.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("record stage result of %s: %w", ref, err)
	}
	return n == 1, nil
}

// LastStageResult reads the ticket's last stage result; ok is false when
// there is none (the first stage, or it expired).
func LastStageResult(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref) (r StageResult, ok bool, err error) {
	raw, err := rdb.Get(ctx, keys.StageResult(ref.Key())).Bytes()
	if errors.Is(err, redis.Nil) {
		return StageResult{}, false, nil
	}
	if err != nil {
		return StageResult{}, false, fmt.Errorf("read stage result of %s: %w", ref, err)
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return StageResult{}, false, fmt.Errorf("read stage result of %s: %w", ref, err)
	}
	return r, true, nil
}

// Review is the reviewer's text of the ticket's last rejection by an
// approval gate (keys.Review, written by lifecycle/gate), for the stage it
// sent the ticket back to; "" when there is none.
func Review(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref) (string, error) {
	s, err := rdb.Get(ctx, keys.Review(ref.Key())).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read review of %s: %w", ref, err)
	}
	return s, nil
}
