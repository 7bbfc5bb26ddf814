package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// A run's outcome is recorded in Redis (runstate.Outcome) the moment its
// pipeline ends, before any tracker call, and again with the work branch's
// commit once that is pushed; the final write (comment, escalation label,
// Done or Failed) is made from the record. A tracker that does not answer
// then costs the run nothing: the run hands the record over (releases its
// lock, the record stays and holds the ticket) and OutcomeFinisher writes it
// when the tracker answers again, on whichever replica leads housekeeping,
// also after this one was killed. The pipeline does not run a second time
// for it: runstate.Take refuses the ticket while its outcome waits, and
// StaleJobDetector leaves such a ticket to the finisher. That holds while
// Redis keeps the record: the run confirms it (re-recording it after Redis
// lost its keys) before it hands over, but a record lost after the
// hand-over (a FLUSHALL, a failover to a replica without it) is gone, and
// its ticket is reverted and run again.

// newOutcome is the record of this attempt's outcome: the ticket moves to
// to with the comment body (short when the tracker refuses body).
func (a *attempt) newOutcome(to State, outcome, reason, body, short, escalate string) runstate.Outcome {
	return runstate.Outcome{Ref: a.req.Ref, Token: a.token, Instance: a.e.cfg.Instance, RequestID: a.req.ID,
		Source: a.req.Source, Attempt: a.req.Attempt, To: to.String(), Outcome: outcome, Reason: reason,
		Body: body, Short: short, EscalateLabel: escalate, Branch: a.branch, Commit: a.pushed,
		Started: a.started.UTC(), Recorded: a.e.cfg.Clock().UTC(), EnqueuedAt: a.req.EnqueuedAt, ClaimedAt: a.req.ClaimedAt}
}

// recordOutcome writes o under the run's lock and reports whether it is
// recorded. A run that lost its lock records nothing (its successor owns
// the ticket); a Redis that cannot be written leaves the run to write its
// outcome directly, as it would without a record.
func (a *attempt) recordOutcome(o runstate.Outcome) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ok, err := runstate.PutOutcome(ctx, a.e.rdb, a.token, o)
	if err != nil {
		a.log.Warn("record the run's outcome (written directly, without a record)", zap.Error(err))
		return false
	}
	if !ok {
		a.log.Warn("record the run's outcome: the run no longer holds the ticket")
	}
	return ok
}

// finishRun writes o, the run's outcome (recorded false: no record of it
// could be made so far), and ends the run: released as terminal once
// written; or handed over, its record left for OutcomeFinisher, when the
// tracker did not take the write and the record is confirmed (handOver).
func (a *attempt) finishRun(ctx context.Context, t *platforms.Ticket, o runstate.Outcome, recorded bool) {
	log := a.log
	err := a.writeOutcome(ctx, t, &o, a.token, recorded, recorded)
	switch {
	case err == nil:
		// Also a first record the second could not replace.
		a.dropOutcome(a.token)
		a.releaseRun(true)
	case errors.Is(err, errStateChanged) || errors.Is(err, ErrIllegalTransition):
		log.Error("transition to "+o.To+": the ticket left in-progress; nothing more to write", zap.Error(err))
		a.dropOutcome(a.token)
		a.releaseRun(false)
	default:
		a.handOver(o, err)
	}
}

// handOver ends a run whose final write failed with werr: it confirms the
// outcome's record (runstate.KeepOutcome, which re-takes the run lock when
// Redis lost it) and only then releases the run, the record holding the
// ticket for OutcomeFinisher. A record that cannot be confirmed is never
// taken for one: the run keeps its lock until it expires and
// StaleJobDetector takes over; a ticket another run owns is left to it.
func (a *attempt) handOver(o runstate.Outcome, werr error) {
	log := a.log.With(zap.NamedError("writeError", werr))
	ctx, cancel := context.WithTimeout(context.Background(), max(a.e.cfg.HeartbeatTTL, 5*time.Second))
	defer cancel()
	var kept runstate.Kept
	err := retryTransient(ctx, func() (err error) {
		kept, err = runstate.KeepOutcome(ctx, a.e.rdb, o, a.e.cfg.HeartbeatTTL)
		return err
	})
	switch {
	case err != nil:
		log.Error("transition to "+o.To+" not written, and its record could not be confirmed (the heartbeat expires and StaleJobDetector takes over)",
			zap.Error(err))
	case kept == runstate.NotKept:
		log.Warn("transition to " + o.To + " not written; the run no longer holds the ticket, which its successor owns")
		a.releaseRun(false)
	case kept == runstate.Retaken && a.killUnconfirmed:
		// Redis lost the lock while it could not be read and the pipeline
		// was killed meanwhile: its run guard killed it for the lost lock,
		// so this is a lost run, run again after the restart grace.
		log.Warn("the run's lock was lost while Redis could not be read and its pipeline was killed by a signal: a lost run, not an outcome; released to be run again")
		a.dropOutcome(a.token)
		a.releaseRun(false)
	default:
		log.Warn("transition to "+o.To+" not written; the outcome is recorded and is written from the record when the tracker answers (housekeeping's OutcomeWriter), never by running the pipeline again",
			zap.Bool("lockRetaken", kept == runstate.Retaken))
		// The record holds the ticket: no run can take it, no repair reverts it.
		a.releaseRun(false)
	}
}

func (a *attempt) dropOutcome(holder string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := runstate.DropOutcome(ctx, a.e.rdb, a.req.Ref, holder); err != nil {
		a.log.Warn("drop the written outcome's record (it is written again, idempotently)", zap.Error(err))
	}
}

// writeOutcome makes o's final write, fenced by a.fence: the comment unless
// posted (then, when recorded says a record exists, marked posted in the
// record held by holder, so no finisher posts it twice), the escalation
// label, and InProgress → o.To. t is a snapshot of the ticket (nil: read
// it). With strict, a comment the tracker did not take for a transient
// reason fails the write, which is made again from the record; without it
// the transition goes ahead, as the comment is a courtesy. A ticket that
// already shows o.To (a write whose answer was lost) is written.
func (a *attempt) writeOutcome(ctx context.Context, t *platforms.Ticket, o *runstate.Outcome, holder string, recorded, strict bool) error {
	e, log := a.e, a.log
	to, err := ParseState(o.To)
	if err != nil || !to.Terminal() {
		return fmt.Errorf("%w: outcome to %q", ErrIllegalTransition, o.To)
	}
	if o.Body != "" && !o.CommentPosted {
		err := a.postComment(ctx, o.Body, o.Short)
		switch {
		case errors.Is(err, errLostRun):
			return err
		case err != nil && strict && !errors.Is(err, platforms.ErrRejected):
			if ctx.Err() == nil && !errors.Is(err, errFenceUnread) {
				// The tracker failed the comment itself, not the write's
				// deadline, a shutdown or Redis.
				return fmt.Errorf("post the %s comment: %w: %w", o.To, errCommentFailed, err)
			}
			return fmt.Errorf("post the %s comment: %w", o.To, err)
		case err != nil:
			log.Error("post the "+o.To+" comment; the transition goes ahead", zap.Error(err))
		default:
			o.CommentPosted = true
		}
		if o.CommentPosted && recorded {
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if _, err := runstate.PutOutcome(pctx, e.rdb, holder, *o); err != nil {
				log.Warn("mark the comment posted in the outcome's record", zap.Error(err))
			}
			cancel()
		}
	}
	if o.EscalateLabel != "" {
		if err := a.addLabel(ctx, o.EscalateLabel); err != nil {
			log.Error("add escalation label", zap.String("label", o.EscalateLabel), zap.Error(err))
		}
	}
	err = retryTransient(ctx, func() error {
		_, err := a.moveAs(ctx, t, InProgress, to, o.Outcome, o.Reason)
		t = nil // moveAs re-reads after a failure; the snapshot is spent
		return err
	})
	if errors.Is(err, errStateChanged) {
		if cur, gerr := a.p.Tracker.Get(ctx, a.req.Ref); gerr == nil && e.cfg.Labels.StateOf(cur.Labels) == to {
			return nil
		}
	}
	return err
}

// errCommentFailed marks a final write that failed because the tracker did
// not take its comment for a transient reason (OutcomeFinisher counts these
// apart: Outcome.CommentTries).
var errCommentFailed = errors.New("comment not taken")

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
	claims *ClaimService
	e      *Executor
}

// NewOutcomeFinisher wires a finisher reporting through claims' observer.
func NewOutcomeFinisher(rdb redis.UniversalClient, claims *ClaimService, cfg OutcomeFinisherConfig) *OutcomeFinisher {
	if cfg.Fence == nil {
		cfg.Fence = func(context.Context) error { return nil }
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = writeTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	cc := claims.cfg
	if cfg.Clock == nil {
		cfg.Clock = cc.Clock
	}
	e := NewExecutor(rdb, nil, claims.projects, ExecutorConfig{Instance: cc.Instance, Labels: cc.Labels, Clock: cfg.Clock,
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
	token := ownerToken(f.e.cfg.Instance, SourceOutcome, f.e.cfg.Clock())
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
	req := PipelineRequest{ID: o.RequestID, Ref: o.Ref, Source: o.Source, Attempt: o.Attempt, EnqueuedAt: o.EnqueuedAt, ClaimedAt: o.ClaimedAt}
	a := &attempt{e: f.e, p: p, req: req, token: token, log: log, started: o.Started,
		commentBudget: min(commentTimeout, f.cfg.WriteTimeout/3)}
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
	case errors.Is(err, errStateChanged) || errors.Is(err, ErrIllegalTransition) || errors.Is(err, platforms.ErrNotFound):
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
		if until, refused := f.claims.Refusals().Refused(ctx, p, &platforms.Ticket{Ref: o.Ref}, RefusalOpTransition,
			OwnerExecutor, SourceOutcome, err); refused && until.After(o.NextTry) {
			o.NextTry = until
		}
	}
	o.LastError = p.Redact.String(err.Error())
	if len(o.LastError) > 500 {
		o.LastError = truncateRunes(o.LastError, 500)
	}
	pctx, pcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	_, _ = runstate.PutOutcome(pctx, f.rdb, token, o)
	pcancel()
	release(false)
	return false, fmt.Errorf("write the outcome of %s: %w", o.Ref, err)
}
