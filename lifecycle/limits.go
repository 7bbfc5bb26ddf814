package lifecycle

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// DefaultLimitDelay is how long a request whose project is at its
// concurrency limit waits in the delayed set before it is tried again.
const DefaultLimitDelay = 2 * time.Second

// atLimit reports whether one of p's semaphores is full right now: a read
// made before the tracker is asked for the ticket, so a project at its limit
// costs no API call per give-back. TakeRunLimited decides for good.
func (e *Executor) atLimit(ctx context.Context, p *Project) (string, bool) {
	slots := p.slots()
	if len(slots) == 0 {
		return "", false
	}
	now := strconv.FormatInt(e.cfg.Clock().UnixMilli(), 10)
	cmds := make([]*redis.IntCmd, len(slots))
	if _, err := e.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, s := range slots {
			cmds[i] = pl.ZCount(ctx, s.Key, "("+now, "+inf")
		}
		return nil
	}); err != nil {
		return "", false // TakeRunLimited will see the same Redis and decide
	}
	for i, s := range slots {
		if cmds[i].Val() >= int64(s.Limit) {
			return s.Key, true
		}
	}
	return "", false
}

// takeRun takes the run and a place in each of p's semaphores; limited
// names the full semaphore when the project (or its token) is at its limit.
// A stale request (its ticket already ran a later attempt) is reported as
// not taken, like one whose ticket another run owns: both are dropped.
func (e *Executor) takeRun(ctx context.Context, p *Project, rec RunRecord, log *zap.Logger) (took bool, limited string, err error) {
	res, full, err := TakeRunLimited(ctx, e.rdb, rec, e.cfg.HeartbeatTTL, e.cfg.Clock(), p.slots())
	if res == RunStale {
		log.Info("request is stale: the ticket already ran a later attempt")
	}
	return res == RunTaken, full, err
}

// delayLimited gives a request whose project is at its limit back through
// the delayed set: it keeps its attempt (nothing ran), and the worker takes
// other work meanwhile instead of spinning on it.
func (e *Executor) delayLimited(ctx context.Context, payload []byte, slot string, log *zap.Logger) (retry bool) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	due := e.cfg.Clock().Add(e.cfg.LimitDelay)
	if err := e.queue.Delay(dctx, payload, due); err != nil {
		log.Warn("delay request at its concurrency limit; giving it back", zap.Error(err))
		e.giveBack(ctx, payload)
		return true
	}
	e.ack(ctx, payload)
	log.Info("concurrency limit reached; request delayed", zap.String("slot", slot), zap.Duration("delay", e.cfg.LimitDelay))
	return false
}

// renewSlots keeps the run's semaphore places alive with its heartbeat.
func (e *Executor) renewSlots(ctx context.Context, p *Project, token string, until time.Time) {
	slots := p.slots()
	if len(slots) == 0 {
		return
	}
	keys := make([]string, len(slots))
	for i, s := range slots {
		keys[i] = s.Key
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.HeartbeatRenew)
	defer cancel()
	if err := RenewSlots(rctx, e.rdb, keys, token, until); err != nil {
		e.log.Warn("renew concurrency slots (they expire with the heartbeat TTL)", zap.Error(err))
	}
}
