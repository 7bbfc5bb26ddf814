package claim

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// SourceCommand marks what a person asked for with a comment command on
// the ticket (`/agent-smith retry`).
const SourceCommand = "command"

// RetryResult reports a Retry. Request is set when the ticket was moved
// back to Enqueued; otherwise Reason says why nothing changed.
type RetryResult struct {
	Ticket  string                     `json:"ticket"`
	State   string                     `json:"state,omitempty"`
	Reason  string                     `json:"reason,omitempty"`
	Request *lifecycle.PipelineRequest `json:"request,omitempty"`
	// Refused is set when the tracker refused the retry's label write for
	// good: lifecycle.Refusals recorded it and told the ticket (once per
	// status), and Reason names the status.
	Refused bool `json:"refused,omitempty"`
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
//
// A retry is a change of the ticket: it ends the ticket's backoff after a
// refusal for good (Refusals.EndBackoff) and writes at once. When the
// tracker refuses the retry's own write for good, that refusal goes
// through Refusals like any other (recorded with RefusalOpRetry, reported,
// the ticket told once per status) and Retry reports it in Reason with
// Refused set, not as an error: sending it again gets it again.
func (c *Service) Retry(ctx context.Context, ref platforms.Ref, source, actor string) (RetryResult, error) {
	res := RetryResult{Ticket: ref.String()}
	p, ok := c.projects.Watched().Lookup(ref)
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

func (c *Service) retryLocked(ctx context.Context, p *lifecycle.Project, ref platforms.Ref, source, actor string) (RetryResult, error) {
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
	case state == lifecycle.Done:
		res.Reason = "already done; remove " + strconv.Quote(c.cfg.Labels.Label(lifecycle.Done)) + " and add the trigger label again to run it again"
		return res, nil
	case state != lifecycle.Failed:
		res.Reason = "state is " + state.String() + ": only a failed ticket is retried"
		return res, nil
	case !t.HasLabel(p.TriggerLabel):
		res.Reason = "no trigger label " + strconv.Quote(p.TriggerLabel) + "; add it to run the ticket again"
		return res, nil
	}
	// Refused before the attempt count is reset; Relabel asks again.
	if err := lifecycle.Check(lifecycle.Failed, lifecycle.Enqueued, lifecycle.OwnerClaimService); err != nil {
		return res, err
	}
	// The failed run releases its heartbeat right after its last label
	// write: until then it still owns the ticket.
	if running, err := runstate.Running(ctx, c.rdb, ref); err != nil {
		return res, fmt.Errorf("retry %s: read heartbeat: %w: %w", ref, ErrRedisUnavailable, err)
	} else if running {
		res.Reason = "its last run is still finishing; try again in a moment"
		return res, nil
	}
	// Start the attempt chain over, so the new request (attempt 1) is not
	// stale to runstate.Take and no cancel left from the failed run stops it.
	if err := runstate.StartOver(ctx, c.rdb, ref); err != nil {
		return res, fmt.Errorf("retry %s: reset attempts: %w: %w", ref, ErrRedisUnavailable, err)
	}
	// A person's retry has every stage's on_failure.max and max_rejections whole again.
	if err := runstate.ForgetTrigger(ctx, c.rdb, ref, false); err != nil {
		return res, fmt.Errorf("retry %s: %w: %w", ref, ErrRedisUnavailable, err)
	}
	c.refusals.EndBackoff(ctx, ref)
	// A ticket that failed in a stage is retried at that stage.
	stage := p.StageShown(c.cfg.Labels, t.Labels, true)
	if _, err := lifecycle.Relabel(ctx, p.Tracker, p.Labels(c.cfg.Labels), t, lifecycle.Move{From: lifecycle.Failed, To: lifecycle.Enqueued, Stage: stage}, lifecycle.OwnerClaimService); err != nil {
		if _, refused := c.refusals.Refused(ctx, p, t, lifecycle.RefusalOpRetry, lifecycle.OwnerClaimService, source, err); refused {
			res.Refused = true
			res.Reason = fmt.Sprintf("the tracker refused the label write for good (HTTP %d); a comment on the ticket says why and "+
				"how to fix it; retry again once it is fixed", platforms.RejectedStatus(err))
			return res, nil
		}
		if errors.Is(err, platforms.ErrPreconditionFailed) {
			res.Reason = "the ticket changed meanwhile; try again"
			return res, nil
		}
		return res, fmt.Errorf("retry %s: transition failed → enqueued: %w", ref, err)
	}
	now := c.cfg.Clock().UTC()
	req := lifecycle.PipelineRequest{ID: redislock.NewToken(), Ref: ref, Source: source, Attempt: 1, EnqueuedAt: now, ClaimedAt: now,
		Priority: p.Priority.Of(t.Labels), Stage: stage, Pool: p.PoolFor(stage)}
	if err := c.queue.Push(ctx, req.Encode()); err != nil {
		return res, fmt.Errorf("retry %s: push request (EnqueuedReconciler will re-push): %w: %w", ref, ErrRedisUnavailable, err)
	}
	c.refusals.Forget(ctx, ref)
	res.State, res.Request = lifecycle.Enqueued.String(), &req
	reason := "retry requested"
	if actor != "" {
		reason += " by " + actor
	}
	c.Emit(lifecycle.Event{Kind: lifecycle.EventTransition, Ref: ref, From: lifecycle.Failed, To: lifecycle.Enqueued, Outcome: "retried", Attempt: 1,
		Owner: lifecycle.OwnerClaimService, Source: source, RequestID: req.ID, Reason: reason, Retrigger: true})
	return res, nil
}
