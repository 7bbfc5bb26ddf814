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
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// EnqueuedReconcilerConfig configures an EnqueuedReconciler.
type EnqueuedReconcilerConfig struct {
	FastInterval time.Duration // default DefaultFastInterval
	SlowInterval time.Duration // default DefaultSlowInterval
	// Grace is how long a ticket must be seen orphaned before it is
	// re-pushed, so a push in flight is never duplicated. Skipped right
	// after Redis lost its data. Default DefaultEnqueuedGrace.
	Grace time.Duration
	// Fence is called immediately before every re-push; see
	// StaleJobDetectorConfig.Fence.
	Fence  func(context.Context) error
	Clock  func() time.Time
	Logger *zap.Logger
}

// EnqueuedReconciler re-pushes Enqueued tickets the queue lost (Enqueued →
// Enqueued). Fast: requests sitting in the processing list of an instance
// that is gone go back to the queue. Slow: every Enqueued ticket on the
// trackers with no entry on any queue level, in the delayed set or in a
// processing list, no claim lock and no in-flight owner gets a new request.
type EnqueuedReconciler struct {
	cfg    EnqueuedReconcilerConfig
	rdb    redis.UniversalClient
	queue  *queue.Queue
	claims *claim.Service
	log    *zap.Logger
	kick   chan struct{}

	// Owned by the Run goroutine.
	orphanSince map[string]time.Time
	urgent      bool
}

// DefaultEnqueuedGrace is the default EnqueuedReconcilerConfig.Grace.
const DefaultEnqueuedGrace = 30 * time.Second

// NewEnqueuedReconciler wires a reconciler.
func NewEnqueuedReconciler(rdb redis.UniversalClient, q *queue.Queue, claims *claim.Service, cfg EnqueuedReconcilerConfig) *EnqueuedReconciler {
	if cfg.FastInterval <= 0 {
		cfg.FastInterval = DefaultFastInterval
	}
	if cfg.SlowInterval <= 0 {
		cfg.SlowInterval = DefaultSlowInterval
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultEnqueuedGrace
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
	return &EnqueuedReconciler{cfg: cfg, rdb: rdb, queue: q, claims: claims, log: cfg.Logger.Named("EnqueuedReconciler"),
		kick: kickChan(), orphanSince: map[string]time.Time{}}
}

// Run runs both cycles until ctx is done.
func (r *EnqueuedReconciler) Run(ctx context.Context) error {
	return loop(ctx, r.log, r.cfg.FastInterval, r.cfg.SlowInterval, r.kick, r.FastCycle, r.SlowCycle, r.slowKicked)
}

// Kick runs the slow cycle now (Redis lost its data).
func (r *EnqueuedReconciler) Kick() { kickNow(r.kick) }

// Run's loop calls slowKicked for a kick, so the grace is skipped exactly
// for the cycle that follows a Redis loss.
func (r *EnqueuedReconciler) slowKicked(ctx context.Context) error {
	r.urgent = true
	return r.SlowCycle(ctx)
}

// FastCycle returns requests taken by dead instances to the queue.
func (r *EnqueuedReconciler) FastCycle(ctx context.Context) error {
	lists, err := r.queue.ProcessingKeys(ctx, keys.ProcessingPattern())
	if err != nil {
		return err
	}
	for _, list := range lists {
		inst := keys.ProcessingInstance(list)
		n, err := r.rdb.Exists(ctx, keys.Instance(inst)).Result()
		if err != nil {
			return fmt.Errorf("read liveness of %s: %w", inst, err)
		}
		if n == 1 {
			continue
		}
		moved, err := r.queue.Requeue(ctx, list)
		if err != nil {
			return err
		}
		if moved > 0 {
			r.claims.Emit(lifecycle.Event{Kind: lifecycle.EventRepair, Outcome: "requeued dead instance's requests",
				Owner: lifecycle.OwnerEnqueuedReconciler, Reason: fmt.Sprintf("instance %s is gone; %d requests back on the queue", inst, moved)})
		}
	}
	return nil
}

// SlowCycle re-pushes orphaned Enqueued tickets.
func (r *EnqueuedReconciler) SlowCycle(ctx context.Context) error {
	labels := r.claims.Labels()
	var errs []error
	var candidates []*platforms.Ticket
	listed, err := lifecycle.ListOpen(ctx, allProjects(r.claims.Projects()), labels.Label(lifecycle.Enqueued))
	if err != nil {
		errs = append(errs, fmt.Errorf("list enqueued tickets: %w", err))
	}
	for _, tickets := range listed {
		for _, t := range tickets {
			if labels.StateOf(t.Labels) == lifecycle.Enqueued {
				candidates = append(candidates, t)
			}
		}
	}
	if len(candidates) == 0 {
		if len(errs) == 0 {
			r.urgent = false
		}
		return errors.Join(errs...)
	}
	// Order matters: the tickets were listed first, so any request pushed for
	// them since is in this snapshot, or its push holds the claim lock.
	queued, err := lifecycle.QueuedTickets(ctx, r.queue)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	// After a Redis loss the grace is skipped until a cycle completes
	// cleanly, so a cycle the fence or an error cut short does not use up
	// the urgency.
	urgent := r.urgent
	now := r.cfg.Clock()
	seen := make(map[string]time.Time, len(candidates))
	for _, t := range candidates {
		k := t.Ref.Key()
		if queued[k] {
			continue
		}
		since, ok := r.orphanSince[k]
		if !ok {
			since = now
		}
		seen[k] = since
		if !urgent && now.Sub(since) < r.cfg.Grace {
			continue
		}
		if err := r.repush(ctx, t.Ref); err != nil {
			errs = append(errs, err)
		}
		delete(seen, k)
	}
	r.orphanSince = seen
	if len(errs) == 0 {
		r.urgent = false
	}
	return errors.Join(errs...)
}

func (r *EnqueuedReconciler) repush(ctx context.Context, ref platforms.Ref) error {
	held, err := r.claims.WithLock(ctx, ref, lifecycle.SourceReconcile, func(ctx context.Context) error {
		_, _, err := r.claims.RequeueLocked(ctx, ref, lifecycle.SourceReconcile, r.cfg.Fence)
		return err
	})
	if err == nil && !held {
		r.log.Debug("claim lock held; skipping orphan check", zap.String("ticketId", ref.ID))
	}
	return err
}
