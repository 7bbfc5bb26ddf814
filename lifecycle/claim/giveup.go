package claim

import (
	"context"
	"fmt"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// GiveUp describes giving up on a Pending ticket whose attempts are used up.
type GiveUp struct {
	// Owner gives up: the claim service, or the StaleJobDetector right after
	// reverting the ticket's last, dead run. Each has its row in Transitions.
	Owner  lifecycle.Owner
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
func (c *Service) FailExhausted(ctx context.Context, p *lifecycle.Project, ref platforms.Ref, g GiveUp) (bool, error) {
	if err := lifecycle.Check(lifecycle.Pending, lifecycle.Failed, g.Owner); err != nil {
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
	body += fmt.Sprintf(". Remove `%s` and add the trigger label to start over.", c.cfg.Labels.Label(lifecycle.Failed))
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
	if c.cfg.Labels.StateOf(t.Labels) != lifecycle.Pending {
		return false, nil
	}
	if err := fence(ctx); err != nil {
		return false, fmt.Errorf("fail exhausted %s: %w", ref, err)
	}
	// Failed keeps the stage it failed in.
	m := lifecycle.Move{From: lifecycle.Pending, To: lifecycle.Failed, Stage: p.StageShown(c.cfg.Labels, t.Labels, false)}
	if _, err := lifecycle.Relabel(ctx, p.Tracker, p.Labels(c.cfg.Labels), t, m, g.Owner); err != nil {
		if _, refused := c.refusals.Refused(ctx, p, t, lifecycle.RefusalOpGiveUp, g.Owner, g.Source, err); refused {
			// Told once; the ticket backs off, so no claim gives up on it
			// (and comments) again until it changes or the backoff ends.
			return false, nil
		}
		return false, fmt.Errorf("fail exhausted %s: %w", ref, err)
	}
	_ = runstate.MarkFinished(ctx, c.rdb, ref)
	c.Emit(lifecycle.Event{Kind: lifecycle.EventTransition, Ref: ref, From: lifecycle.Pending, To: lifecycle.Failed, Outcome: "attempts exhausted", Attempt: g.Used,
		Owner: g.Owner, Source: g.Source, Reason: reason})
	return true, nil
}
