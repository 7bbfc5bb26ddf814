package housekeeping

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// LabelRepairerConfig configures a LabelRepairer.
type LabelRepairerConfig struct {
	Interval time.Duration // default DefaultSlowInterval
	// Fence is checked right before every write; see
	// StaleJobDetectorConfig.Fence.
	Fence  func(context.Context) error
	Logger *zap.Logger
}

// repairedStates are the labels the LabelRepairer lists. A ticket with two
// lifecycle labels carries at least one of them: every transition that can
// be cut off between its add and its removal starts or ends in one, and
// none moves Done ↔ Failed; AwaitingApproval → Failed is the one that
// touches none of the others.
var repairedStates = []lifecycle.State{lifecycle.Pending, lifecycle.Enqueued, lifecycle.InProgress, lifecycle.AwaitingApproval}

// LabelRepairer removes the lifecycle labels lifecycle.Labels.StateOf does
// not pick from tickets that carry several: what a GitHub transition leaves
// when it is cut off between adding the new label and removing the old one
// (a crash, a tracker error). The state such a ticket shows is already
// right (the furthest wins), so this is tidying, done only while nothing
// can be writing the ticket: under its claim lock, with no run holding its
// heartbeat, fenced by the housekeeping lease. One list call per project
// and listed state per cycle (304s, free of rate limit, while nothing
// changes); a write only for a ticket that needs it.
type LabelRepairer struct {
	cfg    LabelRepairerConfig
	rdb    redis.UniversalClient
	claims *claim.Service
	log    *zap.Logger
}

// NewLabelRepairer wires a repairer.
func NewLabelRepairer(rdb redis.UniversalClient, claims *claim.Service, cfg LabelRepairerConfig) *LabelRepairer {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultSlowInterval
	}
	if cfg.Fence == nil {
		cfg.Fence = noFence
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &LabelRepairer{cfg: cfg, rdb: rdb, claims: claims, log: cfg.Logger.Named("LabelRepairer")}
}

// Run repairs every Interval until ctx is done.
func (r *LabelRepairer) Run(ctx context.Context) error {
	return loop(ctx, r.log, r.cfg.Interval, r.cfg.Interval, nil, nil, r.Cycle, nil)
}

// Cycle lists the tickets of every project that may carry several lifecycle
// labels and repairs those that do.
func (r *LabelRepairer) Cycle(ctx context.Context) error {
	labels := r.claims.Labels()
	var errs []error
	projects := r.claims.Projects()
	seen := map[string]bool{}
	for _, s := range repairedStates {
		listed, err := lifecycle.ListOpen(ctx, allProjects(projects), labels.Label(s))
		if err != nil {
			errs = append(errs, fmt.Errorf("list %s tickets: %w", s, err))
		}
		for name, tickets := range listed {
			for _, t := range tickets {
				if seen[t.Ref.Key()] || len(repairOf(projects[name], labels, t).extra) == 0 {
					continue
				}
				seen[t.Ref.Key()] = true
				if _, wait := r.claims.Refusals().BackingOff(ctx, t, time.Time{}); wait {
					continue // the tracker refused its repair for good; unchanged since
				}
				if err := r.repair(ctx, projects[name], t.Ref); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// repair removes the extra lifecycle labels of ref under its claim lock
// (no claim is under way), when no run holds its heartbeat (no executor
// is moving it), from a fresh read.
func (r *LabelRepairer) repair(ctx context.Context, p *lifecycle.Project, ref platforms.Ref) error {
	labels := r.claims.Labels()
	log := r.log.With(zap.String("ticketId", ref.ID), zap.String("platform", ref.Platform), zap.String("project", ref.Project))
	held, err := r.claims.WithLock(ctx, ref, lifecycle.SourceReconcile, func(ctx context.Context) error {
		running, err := runstate.Running(ctx, r.rdb, ref)
		if err != nil {
			return fmt.Errorf("repair labels of %s: %w", ref, err)
		}
		if running {
			log.Debug("a run holds the ticket; its own writes finish the labels")
			return nil
		}
		t, err := p.Tracker.Get(ctx, ref)
		if err != nil {
			return fmt.Errorf("repair labels of %s: read: %w", ref, err)
		}
		rp := repairOf(p, labels, t)
		state, extra := rp.state, rp.extra
		if len(extra) == 0 {
			return nil
		}
		if until, wait := r.claims.Refusals().BackingOff(ctx, t, time.Time{}); wait {
			log.Info("the tracker refused this ticket's label repair for good; not repaired before its backoff ends", zap.Time("until", until))
			return nil
		}
		if err := r.cfg.Fence(ctx); err != nil {
			return fmt.Errorf("repair labels of %s: %w", ref, err)
		}
		// state → state: removes extra, the lifecycle labels other than state's.
		m := lifecycle.Move{From: state, To: state, Stage: rp.stage}
		_, err = lifecycle.Relabel(trackerhttp.WithFence(ctx, r.cfg.Fence), p.Tracker, p.Labels(labels), t, m, lifecycle.OwnerLabelRepairer)
		if _, refused := r.claims.Refusals().Refused(ctx, p, t, lifecycle.RefusalOpRepair, lifecycle.OwnerLabelRepairer, lifecycle.SourceReconcile, err); refused {
			return nil // told once; tried again when the ticket changes or its backoff ends
		}
		if err != nil {
			return fmt.Errorf("repair labels of %s: remove %q: %w", ref, extra, err)
		}
		r.claims.Emit(lifecycle.Event{Kind: lifecycle.EventTransition, Ref: ref, From: state, To: state,
			Outcome: "labels repaired", Owner: lifecycle.OwnerLabelRepairer,
			Reason: fmt.Sprintf("removed %q left by an interrupted write", extra)})
		return nil
	})
	if err == nil && !held {
		log.Debug("claim lock held; repair retried next cycle")
	}
	return err
}

// repair is what a ticket's repair writes: the state its labels show, the
// stage it keeps (the furthest its labels show, none on Done) and the
// lifecycle labels beside those two, which the repair removes.
type repair struct {
	state lifecycle.State
	stage string
	extra []string
}

func repairOf(p *lifecycle.Project, labels lifecycle.Labels, t *platforms.Ticket) repair {
	pl := p.Labels(labels)
	r := repair{state: pl.StateOf(t.Labels)}
	keep := []string{pl.Label(r.state)}
	if r.state != lifecycle.Done {
		if r.stage = pl.StageOf(t.Labels); r.stage != "" {
			keep = append(keep, pl.Stage(r.stage))
		}
	}
	r.extra = slices.DeleteFunc(pl.Lifecycle(t.Labels), func(l string) bool {
		// A decision label on a parked ticket is a person's approval or
		// rejection waiting for the ApprovalGate, whose move removes it.
		if _, decision := pl.Decision(l); decision && r.state == lifecycle.AwaitingApproval {
			return true
		}
		return platforms.ContainsLabel(t.Ref.Platform, keep, l)
	})
	return r
}
