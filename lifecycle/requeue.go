package lifecycle

import (
	"context"
	"fmt"

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
	hb, err := c.rdb.Exists(ctx, keys.Heartbeat(ref.Key())).Result()
	if err != nil {
		return nil, "", fmt.Errorf("requeue %s: read heartbeat: %w: %w", ref, ErrRedisUnavailable, err)
	}
	if hb == 1 {
		return nil, "a run owns it (heartbeat held)", nil
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
	attempt, err := LastAttempt(ctx, c.rdb, ref)
	if err != nil {
		return nil, "", err
	}
	if fence != nil {
		if err := fence(ctx); err != nil {
			return nil, "", fmt.Errorf("requeue %s: %w", ref, err)
		}
	}
	req := PipelineRequest{ID: redislock.NewToken(), Ref: ref, Source: source, Attempt: max(attempt, 1), EnqueuedAt: c.cfg.Clock().UTC()}
	if err := c.queue.Push(ctx, req.Encode()); err != nil {
		return nil, "", fmt.Errorf("requeue %s: %w", ref, err)
	}
	c.Emit(Event{Kind: EventTransition, Ref: ref, From: Enqueued, To: Enqueued, Outcome: "re-pushed", Attempt: req.Attempt,
		Owner: OwnerEnqueuedReconciler, Source: source, RequestID: req.ID, Reason: "no queue entry and no in-flight owner"})
	return &req, "", nil
}

// QueuedTickets returns the ticket keys with a request in the queue or in
// any consumer's processing list.
func QueuedTickets(ctx context.Context, q *queue.Queue) (map[string]bool, error) {
	lists, err := q.ProcessingKeys(ctx, keys.ProcessingPattern())
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool)
	add := func(entries [][]byte) {
		for _, e := range entries {
			if req, err := DecodeRequest(e); err == nil {
				out[req.Ref.Key()] = true
			}
		}
	}
	entries, err := q.Entries(ctx)
	if err != nil {
		return nil, err
	}
	add(entries)
	for _, l := range lists {
		entries, err := q.ProcessingEntries(ctx, l)
		if err != nil {
			return nil, err
		}
		add(entries)
	}
	return out, nil
}
