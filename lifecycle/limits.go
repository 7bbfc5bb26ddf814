package lifecycle

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
)

// DefaultLimitDelay is how long a request whose project is at its
// concurrency limit waits in the delayed set before it is tried again.
const DefaultLimitDelay = 2 * time.Second

// atLimit reports whether one of p's semaphores is full right now: a read
// made before the tracker is asked for the ticket, so a project at its limit
// costs no API call per give-back. runstate.Take decides for good.
func (e *Executor) atLimit(ctx context.Context, p *Project) (string, bool) {
	key, full, err := runstate.Full(ctx, e.rdb, p.slots(), e.cfg.Clock())
	if err != nil {
		return "", false // runstate.Take will see the same Redis and decide
	}
	return key, full
}

// takeRun takes the run and a place in each of p's semaphores; limited
// names the full semaphore when the project (or its token) is at its limit.
// A stale request (its ticket already ran a later attempt) is reported as
// not taken, like one whose ticket another run owns: both are dropped.
func (a *attempt) takeRun(ctx context.Context, rec runstate.Record) (took bool, limited string, err error) {
	e, p, log := a.e, a.p, a.log
	res, full, err := runstate.Take(ctx, e.rdb, rec, e.cfg.HeartbeatTTL, e.cfg.Clock(), p.slots())
	if res == runstate.Stale {
		log.Info("request is stale: the ticket already ran a later attempt")
	}
	return res == runstate.Taken, full, err
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
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.HeartbeatRenew)
	defer cancel()
	if err := runstate.RenewSlots(rctx, e.rdb, slots, token, until); err != nil {
		e.log.Warn("renew concurrency slots (they expire with the heartbeat TTL)", zap.Error(err))
	}
}
