package housekeeping

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
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// StaleJobDetectorConfig configures a StaleJobDetector.
type StaleJobDetectorConfig struct {
	FastInterval time.Duration // default DefaultFastInterval
	SlowInterval time.Duration // default DefaultSlowInterval
	// Fence is called immediately before every write; an error skips the
	// write. The daemon passes the housekeeping lease's Fence, so a leader
	// paused past its lease never writes after another replica took over.
	Fence func(context.Context) error
	Clock func() time.Time
	// RestartGrace is how long after Redis (re)started a missing heartbeat
	// is not yet proof of a dead run (see redisUptime): lifecycle.RestartGrace,
	// by when every live owner has found its heartbeat gone and stopped its
	// pipeline; the executors wait as long before they take a run. 0 trusts
	// a missing heartbeat at once (tests that start a fresh Redis and build
	// the dead run themselves).
	RestartGrace time.Duration
	Logger       *zap.Logger
}

// StaleJobDetector reverts InProgress tickets whose pipeline is presumed
// dead (InProgress → Pending) and claims them again at once with the next
// attempt, or fails them when no attempt is left.
type StaleJobDetector struct {
	cfg    StaleJobDetectorConfig
	rdb    redis.UniversalClient
	claims *claim.Service
	log    *zap.Logger
	kick   chan struct{}
	grace  graceKick // the cycle deferred past a Redis restart
}

// NewStaleJobDetector wires a detector.
func NewStaleJobDetector(rdb redis.UniversalClient, claims *claim.Service, cfg StaleJobDetectorConfig) *StaleJobDetector {
	if cfg.FastInterval <= 0 {
		cfg.FastInterval = DefaultFastInterval
	}
	if cfg.SlowInterval <= 0 {
		cfg.SlowInterval = DefaultSlowInterval
	}
	if cfg.Fence == nil {
		cfg.Fence = noFence
	}
	if cfg.Clock == nil {
		cfg.Clock = wallclock.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &StaleJobDetector{cfg: cfg, rdb: rdb, claims: claims, log: cfg.Logger.Named("StaleJobDetector"), kick: kickChan()}
}

// Run runs both cycles until ctx is done.
func (d *StaleJobDetector) Run(ctx context.Context) error {
	return loop(ctx, d.log, d.cfg.FastInterval, d.cfg.SlowInterval, d.kick, d.FastCycle, d.SlowCycle, d.SlowCycle)
}

// Kick runs the slow cycle now (Redis lost its data).
func (d *StaleJobDetector) Kick() { kickNow(d.kick) }

// FastCycle checks every in-flight run against its heartbeat and its owner
// instance's liveness key. A run whose instance is gone is dead even though
// its heartbeat has time left: this is what makes recovery take seconds.
func (d *StaleJobDetector) FastCycle(ctx context.Context) error {
	if wait, err := d.justRestarted(ctx); wait || err != nil {
		return err
	}
	// Two round trips, whatever the number of runs: the in-flight index,
	// then every heartbeat and every distinct owner instance's liveness key.
	runs, err := runstate.Inspect(ctx, d.rdb)
	if err != nil || len(runs) == 0 {
		return err
	}
	var errs []error
	for _, run := range runs {
		rec, hb := run.Record, run.Holder
		if rec.Token == "" || rec.Ref.ID == "" {
			_ = runstate.Forget(ctx, d.rdb, run.Field)
			continue
		}
		if hb != "" && hb != rec.Token {
			// A newer run owns the ticket; this record is a leftover.
			_, _ = runstate.Release(ctx, d.rdb, rec.Ref, rec.Token, false)
			continue
		}
		if hb == rec.Token && run.OwnerAlive {
			continue
		}
		reason := "heartbeat expired"
		if !run.OwnerAlive {
			reason = "owner instance " + rec.Instance + " is gone"
		}
		if err := d.revert(ctx, rec.Ref, rec.Token, rec.Attempt, reason); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// SlowCycle lists InProgress tickets on every tracker and reverts those with
// no heartbeat: the path that still works after Redis lost the in-flight
// index.
func (d *StaleJobDetector) SlowCycle(ctx context.Context) error {
	if wait, err := d.justRestarted(ctx); wait || err != nil {
		return err
	}
	labels := d.claims.Labels()
	var errs []error
	listed, err := lifecycle.ListOpen(ctx, allProjects(d.claims.Projects()), labels.Label(lifecycle.InProgress))
	if err != nil {
		errs = append(errs, fmt.Errorf("list in-progress tickets: %w", err))
	}
	var inProgress []platforms.Ref
	var snapshots []*platforms.Ticket
	for _, tickets := range listed {
		for _, t := range tickets {
			if labels.StateOf(t.Labels) == lifecycle.InProgress {
				inProgress = append(inProgress, t.Ref)
				snapshots = append(snapshots, t)
			}
		}
	}
	// One round trip per runstate.ManyBatch tickets of every project, not
	// one per ticket; revert re-reads the heartbeat under the claim lock,
	// so a run that started since this read is left alone.
	seen, err := runstate.InspectMany(ctx, d.rdb, inProgress)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for i, ref := range inProgress {
		if seen[i].Running {
			continue
		}
		if _, wait := d.claims.Refusals().BackingOff(ctx, snapshots[i], time.Time{}); wait {
			continue // the tracker refused its write for good; unchanged since
		}
		if err := d.revert(ctx, ref, "", seen[i].LastAttempt, "no heartbeat"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// justRestarted reports whether Redis started less than RestartGrace ago, when
// a heartbeat may be missing because the restart lost it while its owner
// still runs the pipeline: reverting then would start a second run beside it.
func (d *StaleJobDetector) justRestarted(ctx context.Context) (bool, error) {
	if d.cfg.RestartGrace <= 0 {
		return false, nil
	}
	up, err := redisUptime(ctx, d.rdb)
	if err != nil {
		return true, err
	}
	// uptime_in_seconds is whole seconds, rounded down.
	if up <= d.cfg.RestartGrace {
		d.deferPastGrace(up)
		return true, nil
	}
	return false, nil
}

// revert moves a dead run's ticket InProgress → Pending under its claim lock,
// after fencing the dead owner out (its heartbeat is deleted, so a paused
// owner that wakes up can no longer write), then claims it again with the
// next attempt, or fails it when no attempt is left.
func (d *StaleJobDetector) revert(ctx context.Context, ref platforms.Ref, token string, attempt int, reason string) error {
	p, ok := d.claims.Projects().Lookup(ref)
	if !ok {
		if token != "" {
			_, _ = runstate.Release(ctx, d.rdb, ref, token, true)
		}
		return nil
	}
	labels := d.claims.Labels()
	log := d.log.With(zap.String("ticketId", ref.ID), zap.String("platform", ref.Platform), zap.String("project", ref.Project),
		zap.Int("attempt", attempt), zap.String("reason", reason))
	held, err := d.claims.WithLock(ctx, ref, lifecycle.SourceReclaim, func(ctx context.Context) error {
		ctx = trackerhttp.WithFence(ctx, d.cfg.Fence)
		// A run whose pipeline ended and whose outcome waits for the tracker
		// did not die: its outcome is written from its record
		// (OutcomeWriter), and reverting it would run the pipeline again.
		// Its lock is freed for the writer to adopt.
		if waits, err := runstate.OutcomeWaits(ctx, d.rdb, ref); err != nil {
			return fmt.Errorf("revert %s: %w", ref, err)
		} else if waits {
			if token != "" {
				if _, err := runstate.Release(ctx, d.rdb, ref, token, false); err != nil {
					return err
				}
			}
			log.Info("the run's outcome waits for the tracker; not reverted, OutcomeWriter writes it")
			return nil
		}
		if token != "" {
			if _, err := runstate.Release(ctx, d.rdb, ref, token, false); err != nil {
				return err
			}
		}
		t, err := p.Tracker.Get(ctx, ref)
		if err != nil {
			return fmt.Errorf("revert %s: read: %w", ref, err)
		}
		if s := labels.StateOf(t.Labels); s != lifecycle.InProgress {
			log.Info("stale run's ticket already left in-progress; nothing to revert", zap.String("state", s.String()))
			return nil
		}
		if until, wait := d.claims.Refusals().BackingOff(ctx, t, time.Time{}); wait {
			log.Info("the tracker refused this ticket's label write for good; not reverted before its backoff ends", zap.Time("until", until))
			return nil
		}
		// A new run may have taken the ticket since it was found dead (a
		// consumer finishing a half-done start): its heartbeat wins.
		if hb, _, err := runstate.Holder(ctx, d.rdb, ref); err != nil {
			return fmt.Errorf("revert %s: %w", ref, err)
		} else if hb != "" && hb != token {
			log.Info("another run holds the ticket's heartbeat; nothing to revert")
			return nil
		}
		if err := d.cfg.Fence(ctx); err != nil {
			return fmt.Errorf("revert %s: %w", ref, err)
		}
		read := t
		// Pending keeps the stage: the next claim continues at it.
		m := lifecycle.Move{From: lifecycle.InProgress, To: lifecycle.Pending, Stage: p.StageShown(labels, t.Labels, false)}
		t, err = lifecycle.Relabel(ctx, p.Tracker, p.Labels(labels), t, m, lifecycle.OwnerStaleJobDetector)
		if _, refused := d.claims.Refusals().Refused(ctx, p, read, lifecycle.RefusalOpRepair, lifecycle.OwnerStaleJobDetector, lifecycle.SourceReclaim, err); refused {
			return nil // told once; tried again when the ticket changes or its backoff ends
		}
		if err != nil {
			return fmt.Errorf("revert %s: transition in-progress → pending: %w", ref, err)
		}
		d.claims.Emit(lifecycle.Event{Kind: lifecycle.EventTransition, Ref: ref, From: lifecycle.InProgress, To: lifecycle.Pending,
			Outcome: "reverted", Attempt: attempt, Owner: lifecycle.OwnerStaleJobDetector, Source: lifecycle.SourceReclaim, Reason: reason})
		ran := lifecycle.RunAttempt(attempt)
		if p.Pipeline.Attempts().UsedUp(ran) {
			_, err := d.claims.FailExhausted(ctx, p, ref, claim.GiveUp{Owner: lifecycle.OwnerStaleJobDetector,
				Source: lifecycle.SourceReclaim, Used: ran, Cause: "the pipeline's consumer died (" + reason + ")", Fence: d.cfg.Fence})
			return err
		}
		next := lifecycle.NextAttempt(ran)
		if err := d.cfg.Fence(ctx); err != nil {
			return fmt.Errorf("reclaim %s: %w", ref, err)
		}
		res, err := d.claims.ClaimLocked(ctx, ref, lifecycle.SourceReclaim, next, t)
		if err != nil {
			return err
		}
		log.Info("reclaimed reverted ticket", zap.String("outcome", string(res.Outcome)), zap.Int("nextAttempt", next))
		return nil
	})
	if err != nil {
		return err
	}
	if !held {
		log.Info("claim lock held by another actor; revert retried next cycle")
	}
	return nil
}
