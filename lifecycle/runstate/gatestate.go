package runstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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
// rejection counts, review and recorded decision, the timer gate's wait,
// and, with stageResult, the last stage result. A fresh trigger's claim
// forgets all of it, so its first stage never gets an earlier trigger's
// output; a person's retry
// keeps the stage result, which the retried stage needs from the stage
// before it.
func ForgetTrigger(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref, stageResult bool) error {
	k := ref.Key()
	del := []string{keys.SentBack(k), keys.GateRejections(k), keys.Review(k), keys.GateDecision(k), keys.GateTimer(k)}
	if stageResult {
		del = append(del, keys.StageResult(k))
	}
	if err := rdb.Del(ctx, del...).Err(); err != nil {
		return fmt.Errorf("forget the run state of %s: %w", ref, err)
	}
	return nil
}

// Timer is a timer gate's wait: the gated stage starts at Due.
type Timer struct {
	Stage string    `json:"stage"`
	Due   time.Time `json:"due"`
}

// PutTimer records the ticket's timer gate wait (keys.GateTimer), fenced
// by the run's token, until keys.GateTTL past its Due; the run calls it
// before the label write that enqueues the gated stage. It reports
// whether the run still held the ticket.
func PutTimer(ctx context.Context, rdb redis.Scripter, ref platforms.Ref, token string, t Timer, now time.Time) (bool, error) {
	k := ref.Key()
	b, _ := json.Marshal(t) // a string and a time: cannot fail
	ttl := max(t.Due.Sub(now), 0) + keys.GateTTL
	n, err := fencedPutScript.Run(ctx, rdb, []string{keys.Heartbeat(k), keys.GateTimer(k)}, token, b, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("record the timer gate of %s: %w", ref, err)
	}
	return n == 1, nil
}

// TimerOf is the ticket's timer gate wait, and whether one is recorded;
// an unreadable one reads as none.
func TimerOf(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref) (Timer, bool, error) {
	b, err := rdb.Get(ctx, keys.GateTimer(ref.Key())).Bytes()
	if errors.Is(err, redis.Nil) {
		return Timer{}, false, nil
	}
	if err != nil {
		return Timer{}, false, fmt.Errorf("read the timer gate of %s: %w", ref, err)
	}
	var t Timer
	if json.Unmarshal(b, &t) != nil || t.Stage == "" {
		return Timer{}, false, nil
	}
	return t, true, nil
}
