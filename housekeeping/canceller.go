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
	"github.com/agentsmithd/agentsmithd/platforms"
)

// CancelDetectorConfig configures a CancelDetector.
type CancelDetectorConfig struct {
	Interval time.Duration // default DefaultSlowInterval
	// CancelTTL is the lifetime of a cancel request (default keys.CancelTTL).
	CancelTTL time.Duration
	// Fence is checked before every cancel request; see
	// StaleJobDetectorConfig.Fence.
	Fence  func(context.Context) error
	Logger *zap.Logger
}

// CancelDetector finds running pipelines whose ticket was closed or lost its
// trigger label when no webhook said so (a lost delivery, a polling-only
// project) and asks their executor to cancel them
// (runstate.RequestCancel). Per slow cycle and project with running pipelines: one list call of its open
// InProgress tickets, plus one read per running ticket missing from that
// list (closed, or relabelled) or listed without its trigger label: a
// cancel is asked for only from a fresh read, because a search may be
// stale (Jira Cloud's is eventually consistent). A request still Enqueued needs nothing
// here: the consumer re-reads the ticket when it takes the request and fails
// it instead of running it.
type CancelDetector struct {
	cfg    CancelDetectorConfig
	rdb    redis.UniversalClient
	claims *claim.Service
	log    *zap.Logger
}

// NewCancelDetector wires a detector.
func NewCancelDetector(rdb redis.UniversalClient, claims *claim.Service, cfg CancelDetectorConfig) *CancelDetector {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultSlowInterval
	}
	if cfg.Fence == nil {
		cfg.Fence = noFence
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &CancelDetector{cfg: cfg, rdb: rdb, claims: claims, log: cfg.Logger.Named("CancelDetector")}
}

// Run checks every Interval until ctx is done.
func (d *CancelDetector) Run(ctx context.Context) error {
	return loop(ctx, d.log, d.cfg.Interval, d.cfg.Interval, nil, nil, d.Check, d.Check)
}

// Check requests the cancellation of every running pipeline whose ticket is
// closed or untriggered.
func (d *CancelDetector) Check(ctx context.Context) error {
	runs, err := runstate.Runs(ctx, d.rdb)
	if err != nil {
		return err
	}
	byProject := map[string][]platforms.Ref{}
	for _, rec := range runs {
		if rec.Ref.ID != "" {
			byProject[rec.Ref.Project] = append(byProject[rec.Ref.Project], rec.Ref)
		}
	}
	labels := d.claims.Labels()
	var errs []error
	var running []*lifecycle.Project
	for name := range byProject {
		if p, ok := d.claims.Projects()[name]; ok {
			running = append(running, p)
		}
	}
	listedBy, err := lifecycle.ListOpen(ctx, running, labels.Label(lifecycle.InProgress))
	if err != nil {
		errs = append(errs, fmt.Errorf("list in-progress tickets: %w", err))
	}
	for name, refs := range byProject {
		p, ok := d.claims.Projects()[name]
		if !ok {
			continue
		}
		listed, ok := listedBy[name]
		if !ok {
			continue // its listing failed: tried again next cycle
		}
		open := make(map[string]*platforms.Ticket, len(listed))
		for _, t := range listed {
			open[t.Ref.Key()] = t
		}
		for _, ref := range refs {
			// A listed ticket that looks fine needs no read; one missing
			// from the list, or listed with a cause, is read afresh: a
			// search may be stale (Jira Cloud's search/jql is eventually
			// consistent), and only a fresh read may start a cancel.
			if t, ok := open[ref.Key()]; ok && lifecycle.TrackerCause(t, p.TriggerLabel) == "" {
				continue
			}
			t, err := p.Tracker.Get(ctx, ref)
			if err != nil {
				if !errors.Is(err, platforms.ErrNotFound) {
					errs = append(errs, fmt.Errorf("read %s: %w", ref, err))
				}
				continue
			}
			if labels.StateOf(t.Labels) != lifecycle.InProgress {
				continue // finishing, or reverted: not a run to cancel
			}
			cause := lifecycle.TrackerCause(t, p.TriggerLabel)
			if cause == "" {
				continue
			}
			if err := d.cfg.Fence(ctx); err != nil {
				return fmt.Errorf("cancel %s: %w", ref, err)
			}
			if err := runstate.RequestCancel(ctx, d.rdb, ref, cause, d.cfg.CancelTTL); err != nil {
				errs = append(errs, err)
				continue
			}
			d.log.Info("cancel requested for a running ticket", zap.String("ticketId", ref.ID),
				zap.String("platform", ref.Platform), zap.String("project", ref.Project), zap.String("cause", cause))
		}
	}
	return errors.Join(errs...)
}
