package lifecycle

import (
	"context"
	"fmt"

	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// SourceOperator marks what an operator did by hand (agentsmithctl).
const SourceOperator = "operator"

// RequeueLocked pushes a new PipelineRequest for an Enqueued ticket that
// lost its request (Enqueued → Enqueued, the EnqueuedReconciler's
// transition, which agentsmithctl requeue runs on demand). The caller holds
// the ticket's claim lock (WithLock) and has checked that no request for the
// ticket is queued (QueuedTickets). fence, when set, runs right before the
// push. It returns the request pushed, or why none was.
func (c *ClaimService) RequeueLocked(ctx context.Context, ref platforms.Ref, source string, fence func(context.Context) error) (*PipelineRequest, string, error) {
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
	if s := c.cfg.Labels.StateOf(t.Labels); s != Enqueued || !t.Open {
		if !t.Open {
			return nil, "closed", nil
		}
		return nil, "state is " + s.String(), nil
	}
	// The caller's snapshot may predate a request pushed or delayed since
	// (a retry's request joins the delayed set just after its Enqueued
	// label): look again now that the claim lock is held.
	queued, err := QueuedTickets(ctx, c.queue)
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
	req := PipelineRequest{ID: redislock.NewToken(), Ref: ref, Source: source, Attempt: RunAttempt(attempt), EnqueuedAt: c.cfg.Clock().UTC(),
		Priority: p.Priority.Of(t.Labels)}
	if err := c.queue.Push(ctx, req.Encode()); err != nil {
		return nil, "", fmt.Errorf("requeue %s: %w", ref, err)
	}
	c.Emit(Event{Kind: EventTransition, Ref: ref, From: Enqueued, To: Enqueued, Outcome: "re-pushed", Attempt: req.Attempt,
		Owner: OwnerEnqueuedReconciler, Source: source, RequestID: req.ID, Reason: "no queue entry and no in-flight owner"})
	return &req, "", nil
}

// QueuedTickets returns the ticket keys with a request on any queue level,
// in the delayed set (a retry waiting out its backoff, or a request given
// back at a concurrency limit) or in any consumer's processing list.
func QueuedTickets(ctx context.Context, q *queue.Queue) (map[string]bool, error) {
	reqs, err := QueuedRequests(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(reqs))
	for _, req := range reqs {
		out[req.Ref.Key()] = true
	}
	return out, nil
}

// QueuedRequests returns every request on any queue level, in the delayed
// set and in any consumer's processing list, in that order; entries that
// are not PipelineRequests are skipped. q must have the fleet's layout
// (every level and the delayed set), or what it lacks goes unseen.
func QueuedRequests(ctx context.Context, q *queue.Queue) ([]PipelineRequest, error) {
	entries, err := q.Entries(ctx)
	if err != nil {
		return nil, err
	}
	delayed, err := q.DelayedEntries(ctx)
	if err != nil {
		return nil, err
	}
	for _, d := range delayed {
		entries = append(entries, d.Payload)
	}
	lists, err := q.ProcessingKeys(ctx, keys.ProcessingPattern())
	if err != nil {
		return nil, err
	}
	for _, l := range lists {
		more, err := q.ProcessingEntries(ctx, l)
		if err != nil {
			return nil, err
		}
		entries = append(entries, more...)
	}
	out := make([]PipelineRequest, 0, len(entries))
	for _, e := range entries {
		if req, err := DecodeRequest(e); err == nil {
			out = append(out, req)
		}
	}
	return out, nil
}
