package claim

import (
	"context"
	"fmt"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// RequeueLocked pushes a new PipelineRequest for an Enqueued ticket that
// lost its request (Enqueued → Enqueued, the EnqueuedReconciler's
// transition, which agentsmithctl requeue runs on demand). The caller holds
// the ticket's claim lock (WithLock) and has checked that no request for the
// ticket is queued (QueuedTickets). fence, when set, runs right before the
// push. A timer gate recorded for the stage the ticket shows and not yet
// over (runstate.TimerOf) puts the request in the delayed set until its
// end instead. It returns the request pushed, or why none was.
func (c *Service) RequeueLocked(ctx context.Context, ref platforms.Ref, source string, fence func(context.Context) error) (*lifecycle.PipelineRequest, string, error) {
	p, ok := c.projects.Lookup(ref)
	if !ok {
		return nil, "", fmt.Errorf("requeue %s: unknown project %q", ref, ref.Project)
	}
	holder, _, err := runstate.Holder(ctx, c.rdb, ref)
	if err != nil {
		return nil, "", fmt.Errorf("requeue %s: %w: %w", ref, ErrRedisUnavailable, err)
	}
	if holder != "" {
		return nil, "a run owns it (heartbeat held)", nil
	}
	waits, err := runstate.OutcomeWaits(ctx, c.rdb, ref)
	if err != nil {
		return nil, "", fmt.Errorf("requeue %s: %w: %w", ref, ErrRedisUnavailable, err)
	}
	if waits {
		return nil, "its last run's outcome waits for the tracker", nil
	}
	t, err := p.Tracker.Get(ctx, ref)
	if err != nil {
		return nil, "", fmt.Errorf("requeue %s: read: %w", ref, err)
	}
	if s := c.cfg.Labels.StateOf(t.Labels); s != lifecycle.Enqueued || !t.Open {
		if !t.Open {
			return nil, "closed", nil
		}
		return nil, "state is " + s.String(), nil
	}
	// The caller's snapshot may predate a request pushed or delayed since
	// (a retry's request joins the delayed set just after its Enqueued
	// label): look again now that the claim lock is held.
	queued, err := lifecycle.QueuedTickets(ctx, c.queue)
	if err != nil {
		return nil, "", fmt.Errorf("requeue %s: %w: %w", ref, ErrRedisUnavailable, err)
	}
	if queued[ref.Key()] {
		return nil, "already queued", nil
	}
	attempt, err := runstate.LastAttempt(ctx, c.rdb, ref)
	if err != nil {
		return nil, "", err
	}
	if fence != nil {
		if err := fence(ctx); err != nil {
			return nil, "", fmt.Errorf("requeue %s: %w", ref, err)
		}
	}
	stage := p.StageShown(c.cfg.Labels, t.Labels, true)
	timer, timed, err := runstate.TimerOf(ctx, c.rdb, ref)
	if err != nil {
		return nil, "", fmt.Errorf("requeue %s: %w: %w", ref, ErrRedisUnavailable, err)
	}
	now := c.cfg.Clock()
	req := lifecycle.PipelineRequest{ID: redislock.NewToken(), Ref: ref, Source: source, Attempt: lifecycle.RunAttempt(attempt), EnqueuedAt: now.UTC(),
		Priority: p.Priority.Of(t.Labels), Stage: stage, Pool: p.PoolFor(stage)}
	outcome, why := "re-pushed", "no queue entry and no in-flight owner"
	// A stage's timer gate still running (its request lost after the label
	// write) holds the re-push back until its end: the gate is never skipped.
	if timed && p.SameStage(timer.Stage, stage) && timer.Due.After(now) {
		req.EnqueuedAt = timer.Due.UTC()
		if err := c.queue.Delay(ctx, req.Encode(), timer.Due.Sub(now)); err != nil {
			return nil, "", fmt.Errorf("requeue %s: %w", ref, err)
		}
		outcome, why = "re-delayed", fmt.Sprintf("no queue entry and no in-flight owner; stage %s's timer gate ends at %s", stage, timer.Due.UTC().Format(time.RFC3339))
	} else if err := c.queue.Push(ctx, req.Encode()); err != nil {
		return nil, "", fmt.Errorf("requeue %s: %w", ref, err)
	}
	c.Emit(lifecycle.Event{Kind: lifecycle.EventTransition, Ref: ref, From: lifecycle.Enqueued, To: lifecycle.Enqueued, Outcome: outcome, Attempt: req.Attempt,
		Owner: lifecycle.OwnerEnqueuedReconciler, Source: source, RequestID: req.ID, Reason: why})
	return &req, "", nil
}
