package gate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Outcomes of a gate's deadline (Expire); a ticket closed or without
// its trigger label leaves the gate as OutcomeCancelled.
const (
	OutcomeTimedOut  = "timed out" // on_timeout: fail
	OutcomeEscalated = "escalated" // on_timeout: escalate
	// OutcomeUnparked: the ticket no longer awaits approval (or is gone);
	// its entry left the parked index.
	OutcomeUnparked = "dropped from the parked index"
)

// Expire keeps a parked ticket, under its claim lock: it finishes a
// decision recorded and not carried out (Repair's work); a ticket closed
// or without its trigger label leaves the gate as an Enqueued one does
// (Failed, outcome cancelled, the cancellation comment first, its gate
// records and parked index entry gone); a ticket no longer parked, or
// deleted, leaves the parked index. Then it applies the gated stage's
// deadline (gate.approval.timeout, counted from keys.GateParked; a ticket
// parked without that record counts from this first check). Past it,
// on_timeout fail moves the ticket AwaitingApproval → Failed, its comment
// first; escalate adds the escalation label and posts one comment
// mentioning the escalation's handles, once per parking
// (keys.GateEscalated), the ticket staying parked. A ticket a run still
// holds (keys.Heartbeat: the run is parking it) is neither moved nor
// commented on: the next keep looks again. It returns the outcome, ""
// when nothing was due.
func (g *Gate) Expire(ctx context.Context, ref platforms.Ref) (string, error) {
	return g.keep(ctx, ref, nil)
}

// keep is Expire with e, ref's entry in the parked index as read before
// (Reindex's); nil reads it under the lock, before the ticket. An entry is
// dropped only as it was read before the ticket (unparkIfStill): a park
// after that read keeps its own.
func (g *Gate) keep(ctx context.Context, ref platforms.Ref, e *lifecycle.ParkedEntry) (string, error) {
	p, ok := g.claims.Projects().Lookup(ref)
	if !ok {
		return "", fmt.Errorf("gate %s: unknown project %q", ref, ref.Project)
	}
	outcome := ""
	_, err := g.claims.WithLock(ctx, ref, lifecycle.SourceGate, func(ctx context.Context) error {
		// A run that holds a parked ticket is still parking it: nothing
		// moves it before the run lets go; the next keep looks again.
		holds, err := g.runHolds(ctx, ref, 0)
		if err != nil {
			return err
		}
		if rec, ok, err := g.pending(ctx, ref); err != nil {
			return err
		} else if ok {
			if holds {
				return nil
			}
			return g.finish(ctx, p, ref, rec) // moved: no deadline applies
		}
		if e == nil {
			have, ok, err := lifecycle.ParkedFor(ctx, g.rdb, ref)
			if err != nil {
				return fmt.Errorf("gate %s: %w: %w", ref, claim.ErrRedisUnavailable, err)
			}
			if ok {
				e = &have
			}
		}
		t, err := p.Tracker.Get(ctx, ref)
		if errors.Is(err, platforms.ErrNotFound) {
			g.forget(ctx, ref)
			outcome = OutcomeUnparked
			return nil
		}
		if err != nil {
			return fmt.Errorf("gate %s: read ticket: %w", ref, err)
		}
		labels := p.Labels(g.claims.Labels())
		if labels.StateOf(t.Labels) != lifecycle.AwaitingApproval {
			if e == nil {
				return nil
			}
			did, err := unparkIfStill(ctx, g.rdb, *e)
			if err != nil {
				return fmt.Errorf("gate %s: %w: %w", ref, claim.ErrRedisUnavailable, err)
			}
			if did {
				outcome = OutcomeUnparked
			}
			return nil
		}
		if holds {
			return nil
		}
		stage := labels.StageOf(t.Labels)
		if cause := lifecycle.TrackerCause(t, p.TriggerLabel); cause != "" {
			outcome = OutcomeCancelled
			return g.leave(ctx, p, t, stage, cause)
		}
		if t.HasLabel(labels.Approved()) || t.HasLabel(labels.Rejected()) {
			// A person decided by label; the decision goes first (Listed,
			// this cycle or the next), whatever the deadline.
			return nil
		}
		a := approvalOf(p, stage)
		if a.Timeout <= 0 {
			return nil
		}
		parked, since, err := g.parkedAt(ctx, ref, t.Title, stage)
		if err != nil {
			return err
		}
		now := g.cfg.Clock()
		if now.Sub(since) < a.Timeout {
			return nil
		}
		why := fmt.Sprintf("stage %s awaited approval for %s, past its gate's timeout %s", stage, now.Sub(since).Round(time.Second), a.Timeout)
		if a.OnTimeout == lifecycle.OnTimeoutFail {
			outcome = OutcomeTimedOut
			return g.timeOut(ctx, p, t, stage, why, now.Sub(since))
		}
		done, err := g.escalated(ctx, ref, parked)
		if err != nil || done {
			return err
		}
		outcome = OutcomeEscalated
		return g.escalate(ctx, p, t, a, stage, parked, why)
	})
	return outcome, err
}

// parkedAt is the keys.GateParked value of ref (titled title), parked
// awaiting stage, and its time; a missing or unreadable one is recorded as now (lifecycle.Park,
// which lists the ticket in the parked index too), the deadline counting
// from there.
func (g *Gate) parkedAt(ctx context.Context, ref platforms.Ref, title, stage string) (string, time.Time, error) {
	v, err := g.rdb.Get(ctx, keys.GateParked(ref.Key())).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", time.Time{}, fmt.Errorf("gate %s: read when parked: %w: %w", ref, claim.ErrRedisUnavailable, err)
	}
	if at, perr := time.Parse(time.RFC3339Nano, v); err == nil && perr == nil {
		return v, at, nil
	}
	now := g.cfg.Clock().UTC()
	if err := lifecycle.Park(ctx, g.rdb, lifecycle.ParkedEntry{Ref: ref, Stage: stage, Title: title, Since: now}); err != nil {
		return "", time.Time{}, fmt.Errorf("gate %s: %w: %w", ref, claim.ErrRedisUnavailable, err)
	}
	return lifecycle.ParkedStamp(now), now, nil
}

// escalated reports whether the parking recorded as parked escalated.
func (g *Gate) escalated(ctx context.Context, ref platforms.Ref, parked string) (bool, error) {
	v, err := g.rdb.Get(ctx, keys.GateEscalated(ref.Key())).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("gate %s: read escalation: %w: %w", ref, claim.ErrRedisUnavailable, err)
	}
	return v == parked, nil
}

// timeOut fails t, past its gate's deadline: the comment first, then the
// move, as a rejection past max_rejections.
func (g *Gate) timeOut(ctx context.Context, p *lifecycle.Project, t *platforms.Ticket, stage, why string, waited time.Duration) error {
	prefix := "**" + g.claims.Labels().Prefix + "**: "
	return g.fail(ctx, p, t, stage, prefix+"failed: the approval gate timed out: "+why+".", OutcomeTimedOut, why, waited)
}

// leave fails t, parked and closed or without its trigger label (cause,
// lifecycle.TrackerCause), as the executor fails an Enqueued ticket so:
// outcome cancelled, the cancellation comment first.
func (g *Gate) leave(ctx context.Context, p *lifecycle.Project, t *platforms.Ticket, stage, cause string) error {
	labels := p.Labels(g.claims.Labels())
	body := fmt.Sprintf("**%s**: cancelled (%s): stage %s awaited approval and does not run. Remove `%s` and add `%s` to run it again.",
		labels.Prefix, cause, stage, labels.Label(lifecycle.Failed), p.TriggerLabel)
	return g.fail(ctx, p, t, stage, body, OutcomeCancelled, cause+" while stage "+stage+" awaited approval", g.waited(ctx, t.Ref))
}

// fail moves parked t to Failed with outcome, after it waited: body is
// posted first, the ticket read again (on Azure DevOps a comment is a
// revision, which the label write tests), moved, and the gate's records
// forgotten, its parked index entry with them.
func (g *Gate) fail(ctx context.Context, p *lifecycle.Project, t *platforms.Ticket, stage, body, outcome, why string, waited time.Duration) error {
	ref := t.Ref
	if err := p.Tracker.Comment(ctx, ref, lifecycle.SafeComment(p.Redact, body)); err != nil {
		return fmt.Errorf("gate %s: comment: %w", ref, err)
	}
	labels := p.Labels(g.claims.Labels())
	fresh, err := p.Tracker.Get(ctx, ref)
	if err != nil {
		return fmt.Errorf("gate %s: read after the comment: %w", ref, err)
	}
	if s := labels.StateOf(fresh.Labels); s != lifecycle.AwaitingApproval {
		return fmt.Errorf("gate %s: state is %s after the comment, not %s", ref, s, lifecycle.AwaitingApproval)
	}
	m := lifecycle.Move{From: lifecycle.AwaitingApproval, To: lifecycle.Failed, Stage: stage}
	if _, err := lifecycle.Relabel(ctx, p.Tracker, labels, fresh, m, lifecycle.OwnerApprovalGate); err != nil {
		return fmt.Errorf("gate %s: move to %s: %w", ref, lifecycle.Failed, err)
	}
	g.claims.Emit(lifecycle.Event{Kind: lifecycle.EventTransition, At: g.cfg.Clock().UTC(), Ref: ref, From: lifecycle.AwaitingApproval, To: lifecycle.Failed,
		Outcome: outcome, Owner: lifecycle.OwnerApprovalGate, Instance: g.cfg.Instance, Source: lifecycle.SourceGate, Reason: why,
		Stage: stage, ApprovalWait: waited})
	g.forget(ctx, ref)
	return nil
}

// escalate adds the escalation label to t, still parked, and posts the
// one comment mentioning the escalation's handles; the escalation is then
// remembered for this parking. A crash before that posts the comment again
// at the next check.
func (g *Gate) escalate(ctx context.Context, p *lifecycle.Project, t *platforms.Ticket, a lifecycle.Approval, stage, parked, why string) error {
	ref := t.Ref
	if a.EscalateLabel != "" && !t.HasLabel(a.EscalateLabel) {
		if _, err := lifecycle.AddLabel(ctx, p.Tracker, p.Labels(g.claims.Labels()), t, a.EscalateLabel); err != nil {
			return fmt.Errorf("gate %s: add %q: %w", ref, a.EscalateLabel, err)
		}
	}
	body := "**" + g.claims.Labels().Prefix + "**: escalated: " + why + "; it still awaits approval."
	if len(a.Mention) > 0 {
		body += " " + strings.Join(a.Mention, " ")
	}
	if err := p.Tracker.Comment(ctx, ref, lifecycle.SafeComment(p.Redact, body)); err != nil {
		return fmt.Errorf("gate %s: comment: %w", ref, err)
	}
	if err := g.rdb.Set(ctx, keys.GateEscalated(ref.Key()), parked, keys.GateTTL).Err(); err != nil {
		return fmt.Errorf("gate %s: remember the escalation: %w: %w", ref, claim.ErrRedisUnavailable, err)
	}
	g.emit(lifecycle.Event{Ref: ref, To: lifecycle.AwaitingApproval, Outcome: OutcomeEscalated, Reason: why, Stage: stage})
	return nil
}
