package receiver

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// OutcomeCancelRequested answers a delivery that showed an Enqueued or
// InProgress ticket closed or without its trigger label.
const OutcomeCancelRequested = "cancel_requested"

// retryTimeout bounds the re-claims a close event starts in the background.
const retryTimeout = time.Minute

// requestCancel asks the owner of the ticket's request or run to cancel it
// when the payload shows the ticket Enqueued or InProgress but closed or
// without its trigger label. It costs no tracker call: the executor confirms
// the cause on its own fresh read before it stops anything. A ticket parked
// in AwaitingApproval has no owner to ask: the ApprovalGate's Expire, in the
// background, confirms the cause on its fresh read under the claim lock
// and fails it (cancelled). It returns the cause requested, "" when the
// payload shows nothing to cancel.
func (rc *Receiver) requestCancel(ctx context.Context, p *lifecycle.Project, t *platforms.Ticket, log *zap.Logger) (string, error) {
	state := rc.claims.Labels().StateOf(t.Labels)
	switch {
	case state == lifecycle.Enqueued, state == lifecycle.InProgress:
	case state == lifecycle.AwaitingApproval && rc.cfg.Gate != nil:
	default:
		return "", nil
	}
	cause := lifecycle.TrackerCause(t, p.TriggerLabel)
	if cause == "" {
		return "", nil
	}
	if state != lifecycle.AwaitingApproval {
		return cause, runstate.RequestCancel(ctx, rc.rdb, t.Ref, cause, rc.cfg.CancelTTL)
	}
	g, ref := rc.cfg.Gate, t.Ref
	rc.bg.Go(func() {
		ctx, cancel := context.WithTimeout(rc.bgCtx, commandTimeout)
		defer cancel()
		if _, err := g.Expire(ctx, ref); err != nil {
			log.Warn("parked ticket closed or untriggered: leaving the gate failed (the GateKeeper tries again)", zap.String("ticketId", ref.ID), zap.Error(err))
		}
	})
	return cause, nil
}

// retryBlocked claims, in the background, the project's tickets that were
// blocked by the ticket that just closed ("claimed when its last blocker
// closes"). The delivery is answered at once; a failure here is repaired by
// the TriggerSweeper's next cycle.
func (rc *Receiver) retryBlocked(p *lifecycle.Project, closedID string, log *zap.Logger) {
	if !p.RequireNoOpenBlockers {
		return
	}
	project := p.Name
	rc.bg.Go(func() {
		ctx, cancel := context.WithTimeout(rc.bgCtx, retryTimeout)
		defer cancel()
		n, err := rc.claims.RetryBlocked(ctx, project, closedID, lifecycle.SourceWebhook)
		if err != nil {
			log.Warn("retry tickets blocked by a closed ticket", zap.String("closed", closedID), zap.Error(err))
		}
		if n > 0 {
			log.Info("claimed tickets unblocked by a close", zap.String("closed", closedID), zap.Int("claimed", n))
		}
	})
}

// Wait waits for the background work deliveries started: re-claims after
// close events and comment commands.
func (rc *Receiver) Wait() { rc.bg.Wait() }

// Close stops the background re-claims and waits for them (after the HTTP
// server has shut down). A re-claim cut short is repaired by the
// TriggerSweeper.
func (rc *Receiver) Close() {
	rc.bgCancel()
	rc.bg.Wait()
}
