package runstate

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// forgetDecisionScript drops the ticket's recorded gate decision only
// while the run lock holds the run's token.
//
//	KEYS[1]  the ticket's run lock (keys.Heartbeat)
//	KEYS[2]  the ticket's recorded decision (keys.GateDecision)
//	ARGV[1]  the run's token
var forgetDecisionScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[2])
return 1
`)

// ForgetGateDecision drops a gate decision recorded for the ticket
// (keys.GateDecision), fenced by the run's token; the run calls it before
// it parks the ticket in AwaitingApproval, so a decision left from an
// earlier park (its drop failed or the deciding replica died) is never
// carried out on this one. It reports whether the run still held the
// ticket.
func ForgetGateDecision(ctx context.Context, rdb redis.Scripter, ref platforms.Ref, token string) (bool, error) {
	k := ref.Key()
	n, err := forgetDecisionScript.Run(ctx, rdb, []string{keys.Heartbeat(k), keys.GateDecision(k)}, token).Int()
	if err != nil {
		return false, fmt.Errorf("forget the gate decision of %s: %w", ref, err)
	}
	return n == 1, nil
}

// ForgetTrigger deletes what one trigger's run keeps across its stages
// (queues it, on a pipeline): the send-back counts, the approval gates'
// rejection counts, review and recorded decision, and, with stageResult,
// the last stage result. A fresh trigger's claim forgets all of it, so its
// first stage never gets an earlier trigger's output; a person's retry
// keeps the stage result, which the retried stage needs from the stage
// before it.
func ForgetTrigger(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref, stageResult bool) error {
	k := ref.Key()
	del := []string{keys.SentBack(k), keys.GateRejections(k), keys.Review(k), keys.GateDecision(k)}
	if stageResult {
		del = append(del, keys.StageResult(k))
	}
	if err := rdb.Del(ctx, del...).Err(); err != nil {
		return fmt.Errorf("forget the run state of %s: %w", ref, err)
	}
	return nil
}

// MarkParked indexes ref as parked (keys.Parked); the executor calls it
// as it parks the ticket.
func MarkParked(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref) error {
	b, _ := json.Marshal(ref) // strings: cannot fail
	if err := rdb.HSet(ctx, keys.Parked(), ref.Key(), b).Err(); err != nil {
		return fmt.Errorf("index %s as parked: %w", ref, err)
	}
	return nil
}

// UnmarkParked drops ref from the parked index.
func UnmarkParked(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref) error {
	if err := rdb.HDel(ctx, keys.Parked(), ref.Key()).Err(); err != nil {
		return fmt.Errorf("drop %s from the parked index: %w", ref, err)
	}
	return nil
}

// ParkedRefs are the tickets the parked index holds; an unreadable entry
// is skipped.
func ParkedRefs(ctx context.Context, rdb redis.Cmdable) ([]platforms.Ref, error) {
	raw, err := rdb.HGetAll(ctx, keys.Parked()).Result()
	if err != nil {
		return nil, fmt.Errorf("read the parked index: %w", err)
	}
	out := make([]platforms.Ref, 0, len(raw))
	for _, v := range raw {
		var ref platforms.Ref
		if json.Unmarshal([]byte(v), &ref) == nil && ref.ID != "" {
			out = append(out, ref)
		}
	}
	return out, nil
}
