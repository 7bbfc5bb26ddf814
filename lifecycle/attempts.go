package lifecycle

import (
	"context"
	"fmt"

	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Attempts is a project's attempt budget (pipeline.max_attempts). It and
// the functions below are the one place that numbers attempts and decides
// when they are used up; the claim, the StaleJobDetector, the executor's
// retry and the requeue all ask here, so they cannot disagree on whether a
// ticket may run again.
//
// The count kept in Redis (keys.Attempts, LastAttempt) is the attempt of the
// ticket's last started run; 0 means none is known (no run yet, a finished
// ticket, or Redis lost it).
type Attempts struct{ max int }

// Attempts returns the pipeline's attempt budget.
func (pl *Pipeline) Attempts() Attempts { return Attempts{max: pl.MaxAttempts} }

// Limit is how many attempts a ticket gets: max_attempts, at least one.
func (a Attempts) Limit() int { return max(a.max, 1) }

// UsedUp reports whether a ticket that used ran attempts may not run again.
func (a Attempts) UsedUp(ran int) bool { return ran >= a.Limit() }

// AttemptsRan is how many attempts a ticket about to be claimed has used:
// the count Redis keeps, or the attempts before the one the caller asks for
// (a reclaim asks for the one after the dead run; other claims ask for 1),
// whichever is more. So a late webhook after a revert continues the count
// instead of resetting it.
func AttemptsRan(recorded, requested int) int { return max(recorded, requested-1, 0) }

// NextAttempt is the attempt that follows ran used attempts.
func NextAttempt(ran int) int { return max(ran, 0) + 1 }

// RunAttempt is the attempt a run known to have started counted as, from
// the count Redis keeps: a run whose count was lost is taken as the first.
func RunAttempt(recorded int) int { return max(recorded, 1) }

// GiveUp describes giving up on a Pending ticket whose attempts are used up.
type GiveUp struct {
	// Owner gives up: the claim service, or the StaleJobDetector right after
	// reverting the ticket's last, dead run. Each has its row in Transitions.
	Owner  Owner
	Source string // the claim's or repair's trigger source, for the event
	Used   int    // attempts used
	// Cause says what ended the last attempt ("" when a claim finds the
	// count used up), for the comment and the event.
	Cause string
	// Fence, when set, runs right before each write (comment and label).
	Fence func(context.Context) error
}

// FailExhausted gives up on a Pending ticket whose attempts are used up:
// a comment says why nothing runs again and how to start over, then the
// ticket moves Pending → Failed and its attempt count is forgotten. It is the
// only code that does so. The caller holds the ticket's claim lock.
//
// The comment comes first and is required: if it cannot be posted nothing
// is written, the ticket stays Pending with its count, and the next claim of
// it (poller, TriggerSweeper, webhook) gives up again. It reports whether
// the ticket is now Failed (false: it left Pending meanwhile, or the
// tracker refused the label write for good: that refusal goes through
// Refusals, which tells the ticket once and backs it off).
func (c *ClaimService) FailExhausted(ctx context.Context, p *Project, ref platforms.Ref, g GiveUp) (bool, error) {
	if err := Check(Pending, Failed, g.Owner); err != nil {
		return false, fmt.Errorf("fail exhausted %s: %w", ref, err)
	}
	fence := g.Fence
	if fence == nil {
		fence = func(context.Context) error { return nil }
	}
	limit := p.Pipeline.Attempts().Limit()
	reason := fmt.Sprintf("attempts exhausted (%d of %d)", g.Used, limit)
	body := fmt.Sprintf("**%s**: not running again: %d of %d attempts used", c.cfg.Labels.Prefix, g.Used, limit)
	if g.Cause != "" {
		reason += ": " + g.Cause
		body += ": " + g.Cause
	}
	body += fmt.Sprintf(". Remove `%s` and add the trigger label to start over.", c.cfg.Labels.Label(Failed))
	if err := fence(ctx); err != nil {
		return false, fmt.Errorf("fail exhausted %s: %w", ref, err)
	}
	if err := p.Tracker.Comment(ctx, ref, body); err != nil {
		return false, fmt.Errorf("fail exhausted %s: comment (the next claim tries again): %w", ref, err)
	}
	t, err := p.Tracker.Get(ctx, ref) // the comment changed the version
	if err != nil {
		return false, fmt.Errorf("fail exhausted %s: re-read: %w", ref, err)
	}
	if c.cfg.Labels.StateOf(t.Labels) != Pending {
		return false, nil
	}
	if err := fence(ctx); err != nil {
		return false, fmt.Errorf("fail exhausted %s: %w", ref, err)
	}
	if _, err := Relabel(ctx, p.Tracker, c.cfg.Labels, t, Pending, Failed, g.Owner); err != nil {
		if _, refused := c.refusals.Refused(ctx, p, t, RefusalOpGiveUp, g.Owner, g.Source, err); refused {
			// Told once; the ticket backs off, so no claim gives up on it
			// (and comments) again until it changes or the backoff ends.
			return false, nil
		}
		return false, fmt.Errorf("fail exhausted %s: %w", ref, err)
	}
	_ = runstate.MarkFinished(ctx, c.rdb, ref)
	c.Emit(Event{Kind: EventTransition, Ref: ref, From: Pending, To: Failed, Outcome: "attempts exhausted", Attempt: g.Used,
		Owner: g.Owner, Source: g.Source, Reason: reason})
	return true, nil
}
