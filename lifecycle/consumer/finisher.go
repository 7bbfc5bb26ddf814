package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// SourceOutcome names the OutcomeFinisher as the holder of a ticket's run
// lock while it writes a recorded outcome.
const SourceOutcome = "outcome"

// strictCommentTries is how many of a finisher's tries that failed on the
// comment itself (Outcome.CommentTries; a tracker that does not answer at
// all, a lost lease or a shutdown count apart) hold the transition back
// for a comment the tracker fails for a transient reason: after them
// the comment is given up and the label written, since a tracker that
// keeps failing comments (and only them) must not hold the ticket's state
// back for ever.
const strictCommentTries = 3

// Outcome retry backoff: a record whose write failed is not tried again for
// outcomeRetryInitial, doubled after each failed try, at most
// outcomeRetryMax, so a tracker that stays down or keeps failing is not
// asked every cycle.
const (
	outcomeRetryInitial = 5 * time.Second
	outcomeRetryMax     = 5 * time.Minute
)

func outcomeRetryDelay(tries int) time.Duration {
	d := outcomeRetryInitial
	for i := 1; i < tries && d < outcomeRetryMax; i++ {
		d *= 2
	}
	return min(d, outcomeRetryMax)
}

// OutcomeFinisherConfig configures an OutcomeFinisher.
type OutcomeFinisherConfig struct {
	// Fence is checked right before every write besides the run lock the
	// finisher takes: the housekeeping lease's.
	Fence func(context.Context) error
	// LockTTL is how long the finisher holds a ticket's run lock while it
	// writes (default keys.HeartbeatTTL), without renewing it; WriteTimeout
	// bounds one write (default 30 s) and is cut to LockTTL/2.
	LockTTL      time.Duration
	WriteTimeout time.Duration
	// Clock reads the time (default: the claim service's).
	Clock  func() time.Time
	Logger *zap.Logger
}

// OutcomeFinisher writes recorded outcomes whose run handed them over or
// died: under the ticket's run lock, taken with a token of its own, from
// the record alone (runstate.Outcome), so the pipeline never runs again.
type OutcomeFinisher struct {
	cfg    OutcomeFinisherConfig
	rdb    redis.UniversalClient
	claims *claim.Service
	e      *Executor
}

// NewOutcomeFinisher wires a finisher reporting through claims' observer.
func NewOutcomeFinisher(rdb redis.UniversalClient, claims *claim.Service, cfg OutcomeFinisherConfig) *OutcomeFinisher {
	if cfg.Fence == nil {
		cfg.Fence = func(context.Context) error { return nil }
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = writeTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	cc := claims.Config()
	if cfg.Clock == nil {
		cfg.Clock = cc.Clock
	}
	e := NewExecutor(rdb, nil, claims.ProjectSource(), ExecutorConfig{Instance: cc.Instance, Labels: cc.Labels, Clock: cfg.Clock,
		Logger: cfg.Logger, Observer: cc.Observer, HeartbeatTTL: cfg.LockTTL})
	cfg.LockTTL = e.cfg.HeartbeatTTL
	// The finisher does not renew its lock: a write must end well within
	// it, or another finisher could adopt the record mid-write.
	if limit := cfg.LockTTL / 2; cfg.WriteTimeout > limit {
		cfg.Logger.Warn("outcome write timeout cut to half the lock TTL", zap.Duration("writeTimeout", cfg.WriteTimeout),
			zap.Duration("lockTTL", cfg.LockTTL), zap.Duration("now", limit))
		cfg.WriteTimeout = limit
	}
	return &OutcomeFinisher{cfg: cfg, rdb: rdb, claims: claims, e: e}
}

// Finish writes o when its ticket's run lock is free or still held by
// departed (the token of a run known dead; "" when none is), and reports
// whether o is done with: written, or nothing left to write. A write the
// tracker does not take leaves the record, with the try counted and the
// next one backed off (Outcome.NextTry; a call before it does nothing).
func (f *OutcomeFinisher) Finish(ctx context.Context, o runstate.Outcome, departed string) (bool, error) {
	log := f.e.log.With(zap.String("ticketId", o.Ref.ID), zap.String("platform", o.Ref.Platform), zap.String("project", o.Ref.Project),
		zap.Int("attempt", o.Attempt), zap.String("to", o.To), zap.Time("recorded", o.Recorded))
	// An owner token like a run's, so whoever finds the lock held (a
	// dropped request, the status page) reads who holds it and why.
	token := lifecycle.OwnerToken(f.e.cfg.Instance, SourceOutcome, f.e.cfg.Clock())
	if o.NextTry.After(f.e.cfg.Clock()) {
		return false, nil // backing off after a failed try
	}
	adopted, err := runstate.AdoptOutcome(ctx, f.rdb, o.Ref, token, departed, f.cfg.LockTTL)
	if err != nil || adopted == runstate.Busy {
		return false, err
	}
	if adopted == runstate.Finished {
		return true, nil
	}
	// The run's in-flight entry and concurrency places, if it died with them.
	if _, err := runstate.Release(ctx, f.rdb, o.Ref, o.Token, false); err != nil {
		log.Warn("release the departed run's entry", zap.Error(err))
	}
	// drop deletes the record once written or moot, also when ctx (the
	// writer's loop, its lease) ended meanwhile: a record left after a
	// terminal release would be written a second time.
	drop := func() error {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, err := runstate.DropOutcome(dctx, f.rdb, o.Ref, token)
		return err
	}
	release := func(terminal bool) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := runstate.Release(rctx, f.rdb, o.Ref, token, terminal); err != nil {
			log.Warn("release the ticket after writing its outcome (the lock expires)", zap.Error(err))
		}
	}
	p, ok := f.claims.LookupAny(o.Ref)
	if !ok {
		log.Warn("outcome of a ticket of no configured project dropped")
		err := drop()
		release(false)
		return err == nil, err
	}
	req := lifecycle.PipelineRequest{ID: o.RequestID, Ref: o.Ref, Source: o.Source, Attempt: o.Attempt, EnqueuedAt: o.EnqueuedAt, ClaimedAt: o.ClaimedAt,
		Pool: p.PoolFor("")}
	a := &attempt{e: f.e, p: p, req: req, token: token, log: log, started: o.Started,
		commentBudget: min(lifecycle.CommentTimeout, f.cfg.WriteTimeout/3)}
	runFence := a.newFence(nil)
	a.fence = func(ctx context.Context) error {
		if err := f.cfg.Fence(ctx); err != nil {
			return fmt.Errorf("%w: %w", errLostRun, err)
		}
		return runFence(ctx)
	}
	wctx, cancel := context.WithTimeout(ctx, f.cfg.WriteTimeout)
	defer cancel()
	t, err := p.Tracker.Get(wctx, o.Ref)
	if err == nil {
		if until, wait := f.claims.Refusals().BackingOff(wctx, t, time.Time{}); wait {
			release(false)
			log.Info("the tracker refused this ticket's write for good; the outcome is written when its backoff ends", zap.Time("until", until))
			return false, nil
		}
		err = a.writeOutcome(wctx, t, &o, token, true, o.CommentTries < strictCommentTries)
	}
	switch {
	case err == nil:
		log.Info("outcome written from its record", zap.Duration("waited", o.Age(f.e.cfg.Clock())))
		if err := drop(); err != nil {
			log.Warn("drop the written outcome's record (it is written again, idempotently)", zap.Error(err))
		}
		release(true)
		return true, nil
	case errors.Is(err, errStateChanged) || errors.Is(err, lifecycle.ErrIllegalTransition) || errors.Is(err, platforms.ErrNotFound):
		log.Warn("the ticket left in-progress; its recorded outcome is dropped", zap.Error(err))
		derr := drop()
		release(false)
		return derr == nil, derr
	}
	o.Tries++
	if errors.Is(err, errCommentFailed) {
		o.CommentTries++
	}
	now := f.e.cfg.Clock()
	o.NextTry = now.Add(outcomeRetryDelay(o.Tries))
	if t == nil {
		// The read itself failed: a refusal for good (401, 403, 404 of a
		// token that lost access) is the tracker's rule's to report and
		// back off; the stand-in snapshot matches no real read, so only
		// NextTry holds the record back.
		if until, refused := f.claims.Refusals().Refused(ctx, p, &platforms.Ticket{Ref: o.Ref}, lifecycle.RefusalOpTransition,
			lifecycle.OwnerExecutor, SourceOutcome, err); refused && until.After(o.NextTry) {
			o.NextTry = until
		}
	}
	o.LastError = p.Redact.String(err.Error())
	if len(o.LastError) > 500 {
		o.LastError = lifecycle.TruncateRunes(o.LastError, 500)
	}
	pctx, pcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	_, _ = runstate.PutOutcome(pctx, f.rdb, token, o)
	pcancel()
	release(false)
	return false, fmt.Errorf("write the outcome of %s: %w", o.Ref, err)
}
