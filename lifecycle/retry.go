package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// SourceCommand marks what a person asked for with a comment command on
// the ticket (`/agent-smith retry`).
const SourceCommand = "command"

// RetryResult reports a Retry. Request is set when the ticket was moved
// back to Enqueued; otherwise Reason says why nothing changed.
type RetryResult struct {
	Ticket  string           `json:"ticket"`
	State   string           `json:"state,omitempty"`
	Reason  string           `json:"reason,omitempty"`
	Request *PipelineRequest `json:"request,omitempty"`
}

// Retried reports whether the retry queued a request.
func (r RetryResult) Retried() bool { return r.Request != nil }

// Retry runs a Failed ticket again: under its claim lock it moves the ticket
// Failed → Enqueued with a fresh attempt count (as removing the failed label
// and adding the trigger label again would) and pushes a PipelineRequest
// like a claim's. It is the one owner of "retry a ticket": agentsmithctl
// retry and the `/agent-smith retry` comment command both call it; actor
// names who asked (for the record; the caller gates who may).
//
// Only Failed tickets are retried. Anything else changes nothing and says
// why in RetryResult.Reason: Pending, Enqueued and InProgress tickets are
// already on their way; a Done ticket is finished (re-adding the trigger
// label runs it again, a deliberate act); a closed ticket, or one without
// the trigger label, would be cancelled at once by the consumer (see
// TrackerCause), so it is refused rather than queued to fail. Blockers are
// not checked again: a person asked for this run.
func (c *ClaimService) Retry(ctx context.Context, ref platforms.Ref, source, actor string) (RetryResult, error) {
	res := RetryResult{Ticket: ref.String()}
	p, ok := c.projects.Lookup(ref)
	if !ok {
		return res, fmt.Errorf("retry %s: unknown project %q", ref, ref.Project)
	}
	held, err := c.WithLock(ctx, ref, source, func(ctx context.Context) error {
		var err error
		res, err = c.retryLocked(ctx, p, ref, source, actor)
		return err
	})
	if err != nil {
		return res, err
	}
	if !held {
		res.Reason = "a claim or repair holds the ticket's claim lock; try again in a moment"
	}
	return res, nil
}

func (c *ClaimService) retryLocked(ctx context.Context, p *Project, ref platforms.Ref, source, actor string) (RetryResult, error) {
	res := RetryResult{Ticket: ref.String()}
	t, err := p.Tracker.Get(ctx, ref)
	if errors.Is(err, platforms.ErrNotFound) {
		res.Reason = "not found"
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("retry %s: read ticket: %w", ref, err)
	}
	state := c.cfg.Labels.StateOf(t.Labels)
	res.State = state.String()
	switch {
	case !t.Open:
		res.Reason = "closed"
		return res, nil
	case state == Done:
		res.Reason = "already done; remove " + strconv.Quote(c.cfg.Labels.Label(Done)) + " and add the trigger label again to run it again"
		return res, nil
	case state != Failed:
		res.Reason = "state is " + state.String() + ": only a failed ticket is retried"
		return res, nil
	case !t.HasLabel(p.TriggerLabel):
		res.Reason = "no trigger label " + strconv.Quote(p.TriggerLabel) + "; add it to run the ticket again"
		return res, nil
	}
	if err := Check(Failed, Enqueued, OwnerClaimService); err != nil {
		return res, err
	}
	// The failed run releases its heartbeat right after its last label
	// write: until then it still owns the ticket.
	if hb, err := c.rdb.Exists(ctx, keys.Heartbeat(ref.Key())).Result(); err != nil {
		return res, fmt.Errorf("retry %s: read heartbeat: %w: %w", ref, ErrRedisUnavailable, err)
	} else if hb == 1 {
		res.Reason = "its last run is still finishing; try again in a moment"
		return res, nil
	}
	if err := freshAttempts(ctx, c.rdb, ref); err != nil {
		return res, err
	}
	if _, err := p.Tracker.Relabel(ctx, t, c.cfg.Labels.Lifecycle(t.Labels), c.cfg.Labels.Label(Enqueued)); err != nil {
		if errors.Is(err, platforms.ErrPreconditionFailed) {
			res.Reason = "the ticket changed meanwhile; try again"
			return res, nil
		}
		return res, fmt.Errorf("retry %s: transition failed → enqueued: %w", ref, err)
	}
	now := c.cfg.Clock().UTC()
	req := PipelineRequest{ID: redislock.NewToken(), Ref: ref, Source: source, Attempt: 1, EnqueuedAt: now, ClaimedAt: now,
		Priority: p.Priority.Of(t.Labels)}
	if err := c.queue.Push(ctx, req.Encode()); err != nil {
		return res, fmt.Errorf("retry %s: push request (EnqueuedReconciler will re-push): %w: %w", ref, ErrRedisUnavailable, err)
	}
	res.State, res.Request = Enqueued.String(), &req
	reason := "retry requested"
	if actor != "" {
		reason += " by " + actor
	}
	c.Emit(Event{Kind: EventTransition, Ref: ref, From: Failed, To: Enqueued, Outcome: "retried", Attempt: 1,
		Owner: OwnerClaimService, Source: source, RequestID: req.ID, Reason: reason, Retrigger: true})
	return res, nil
}

// freshAttempts starts the ticket's attempt chain over, as a terminal
// release does: its attempt count and any cancel request left from the
// failed run are forgotten, so the new request (attempt 1) is not stale to
// takeRunScript and is not cancelled by an old request.
func freshAttempts(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref) error {
	k := ref.Key()
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HDel(ctx, keys.Attempts(), k)
		p.Del(ctx, keys.Cancel(k))
		return nil
	})
	if err != nil {
		return fmt.Errorf("retry %s: reset attempts: %w: %w", ref, ErrRedisUnavailable, err)
	}
	return nil
}
