package runstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// StageResult is what a finished stage hands the stage that runs next:
// its name and the result its pipeline wrote, as JSON (bounded by the
// consumer's reading of the result file). For names that stage: the next
// one after a success, the on_failure.back_to stage after a send-back; a
// record without it is for the stage after Stage.
type StageResult struct {
	Stage  string          `json:"stage"`
	For    string          `json:"for,omitempty"`
	Result json.RawMessage `json:"result"`
}

// fencedPutScript writes a record of the run (the stage result, a timer
// gate's wait) only while the run lock holds the run's token: a run that
// lost its ticket hands nothing over.
//
//	KEYS[1]  the ticket's run lock (keys.Heartbeat)
//	KEYS[2]  the record's key (keys.StageResult, keys.GateTimer)
//	ARGV[1]  the run's token
//	ARGV[2]  the record (JSON)
//	ARGV[3]  TTL in milliseconds
var fencedPutScript = redis.NewScript(`
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
	n, err := fencedPutScript.Run(ctx, rdb, []string{keys.Heartbeat(k), keys.StageResult(k)}, token, string(b),
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

// sendBackScript counts one send-back of a ticket from a stage, only while
// the run lock holds the run's token and only while the stage has sent the
// ticket back fewer than max times.
//
//	KEYS[1]  the ticket's run lock (keys.Heartbeat)
//	KEYS[2]  the ticket's send-back counts (keys.SentBack)
//	ARGV[1]  the run's token
//	ARGV[2]  the stage (hash field)
//	ARGV[3]  max
//	ARGV[4]  TTL in milliseconds
//
// Returns -1 when the run no longer holds the ticket, else {1, count}
// when counted or {0, count} when count already reached max.
var sendBackScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return {-1, 0}
end
local n = tonumber(redis.call('HGET', KEYS[2], ARGV[2]) or '0') or 0
if n >= tonumber(ARGV[3]) then
  return {0, n}
end
n = redis.call('HINCRBY', KEYS[2], ARGV[2], 1)
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return {1, n}
`)

// SendBack is what CountSendBack did.
type SendBack int

// CountSendBack's answers.
const (
	SentBackCounted SendBack = iota // counted: the ticket goes back
	SentBackUsedUp                  // the stage sent it back max times already
	SentBackLost                    // the run no longer holds the ticket
)

// CountSendBack counts one send-back of the ticket from stage, fenced by
// the run's token, unless stage already sent it back max times; n is the
// count after the call. The counts live for keys.SentBackTTL from the last
// send-back and are forgotten by a fresh trigger's claim (ForgetSentBack).
func CountSendBack(ctx context.Context, rdb redis.Scripter, ref platforms.Ref, token, stage string, max int) (SendBack, int, error) {
	k := ref.Key()
	v, err := sendBackScript.Run(ctx, rdb, []string{keys.Heartbeat(k), keys.SentBack(k)}, token, stage, max,
		keys.SentBackTTL.Milliseconds()).Int64Slice()
	if err != nil {
		return SentBackLost, 0, fmt.Errorf("count a send-back of %s from stage %s: %w", ref, stage, err)
	}
	if len(v) != 2 {
		return SentBackLost, 0, fmt.Errorf("count a send-back of %s from stage %s: reply %v", ref, stage, v)
	}
	switch v[0] {
	case 1:
		return SentBackCounted, int(v[1]), nil
	case 0:
		return SentBackUsedUp, int(v[1]), nil
	}
	return SentBackLost, 0, nil
}

// SentBackCounts are the ticket's send-back counts by stage.
func SentBackCounts(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref) (map[string]int, error) {
	raw, err := rdb.HGetAll(ctx, keys.SentBack(ref.Key())).Result()
	if err != nil {
		return nil, fmt.Errorf("read send-back counts of %s: %w", ref, err)
	}
	out := make(map[string]int, len(raw))
	for s, v := range raw {
		n, _ := strconv.Atoi(v)
		out[s] = n
	}
	return out, nil
}

// ForgetSentBack deletes the ticket's send-back counts (queues it, on a
// pipeline): a fresh trigger or a person's retry starts with every stage's
// on_failure.max whole.
func ForgetSentBack(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref) error {
	if err := rdb.Del(ctx, keys.SentBack(ref.Key())).Err(); err != nil {
		return fmt.Errorf("forget send-backs of %s: %w", ref, err)
	}
	return nil
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
