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

// takeRun takes the run and a place in each of p's semaphores; wait is how
// long to put the request aside instead: a semaphore of p (or of its
// token) is full, or Redis restarted within the restart grace. A stale
// request (its ticket already ran a later attempt) is reported as not
// taken, like one whose ticket another run owns: both are dropped.
func (a *attempt) takeRun(ctx context.Context, rec runstate.Record) (took bool, wait time.Duration, why string, err error) {
	e, p, log := a.e, a.p, a.log
	res, err := runstate.Take(ctx, e.rdb, rec, runstate.TakeArgs{TTL: e.cfg.HeartbeatTTL, Now: e.cfg.Clock(),
		Slots: p.slots(), RestartGrace: e.cfg.RestartGrace})
	switch res.Result {
	case runstate.Stale:
		log.Info("request is stale: the ticket already ran a later attempt")
	case runstate.Limited:
		return false, e.cfg.LimitDelay, "concurrency limit reached (" + res.Slot + ")", err
	case runstate.Restarting:
		// A little past the grace, so the next take finds it over.
		return false, res.Wait + 100*time.Millisecond, "Redis restarted less than the restart grace ago", err
	}
	return res.Result == runstate.Taken && err == nil, 0, "", err
}

// delay puts a request that cannot run yet back through the delayed set
// for wait: it keeps its attempt (nothing ran), and the worker takes other
// work meanwhile instead of spinning on it.
func (e *Executor) delay(ctx context.Context, payload []byte, wait time.Duration, why string, log *zap.Logger) (retry bool) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	due := e.cfg.Clock().Add(wait)
	if err := e.queue.Delay(dctx, payload, due); err != nil {
		log.Warn("delay request; giving it back", zap.String("why", why), zap.Error(err))
		e.giveBack(ctx, payload)
		return true
	}
	e.ack(ctx, payload)
	log.Info("request delayed", zap.String("why", why), zap.Duration("delay", wait))
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
