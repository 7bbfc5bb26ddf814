package receiver

import (
	"context"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/gate"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Decider decides tickets awaiting approval: the ApprovalGate
// (lifecycle/gate). Expire keeps one (a ticket closed or without its
// trigger label leaves the gate, cancelled).
type Decider interface {
	Decide(ctx context.Context, ref platforms.Ref, actor string, d gate.Decision) (claim.CommandResult, error)
	DecideByLabel(ctx context.Context, ref platforms.Ref, actor string, approve bool) (claim.CommandResult, error)
	Expire(ctx context.Context, ref platforms.Ref) (string, error)
}

// decisionLabel hands a change that added a decision label
// (<prefix>:approved, <prefix>:rejected) to the gate, in the background
// as a command, and reports whether it did.
func (rc *Receiver) decisionLabel(p *lifecycle.Project, ref platforms.Ref, ev *platforms.WebhookEvent, log *zap.Logger) bool {
	g := rc.cfg.Gate
	if g == nil || len(p.Stages) == 0 {
		return false
	}
	labels := p.Labels(rc.claims.Labels())
	approve := ev.AddedLabel(labels.Approved())
	if !approve && !ev.AddedLabel(labels.Rejected()) {
		return false
	}
	actor := ev.Actor
	rc.bg.Go(func() {
		ctx, cancel := context.WithTimeout(rc.bgCtx, commandTimeout)
		defer cancel()
		if _, err := g.DecideByLabel(ctx, ref, actor, approve); err != nil {
			log.Warn("decision by label failed", zap.String("ticketId", ref.ID), zap.Error(err))
		}
	})
	return true
}

// commandRest is what follows the command word on a command's line (the
// prefix, the word, then this): a rejection's reason.
func commandRest(line string) string {
	f := strings.Fields(line)
	if len(f) < 2 {
		return ""
	}
	rest := strings.TrimSpace(line)
	for _, w := range f[:2] {
		rest = strings.TrimSpace(strings.TrimPrefix(rest, w))
	}
	return rest
}

// OutcomeCommand answers a delivery of a comment command: it is carried out
// in the background.
const OutcomeCommand = "command_accepted"

// commandTimeout bounds one comment command (a permission lookup, a
// tracker read and write, a reply).
const commandTimeout = time.Minute

// runCommand carries out a comment command in the background, so the
// delivery is answered at once (GitHub gives a webhook 10 s). A command
// that fails (tracker or Redis unreachable) is logged; its author can
// comment again.
func (rc *Receiver) runCommand(ref platforms.Ref, actor, command, line string, log *zap.Logger) {
	rc.bg.Go(func() {
		ctx, cancel := context.WithTimeout(rc.bgCtx, commandTimeout)
		defer cancel()
		if g := rc.cfg.Gate; g != nil && (command == claim.CommandApprove || command == claim.CommandReject) {
			d := gate.Decision{Kind: gate.Approve}
			if command == claim.CommandReject {
				d = gate.Decision{Kind: gate.Reject, Reason: commandRest(line)}
			}
			if _, err := g.Decide(ctx, ref, actor, d); err != nil {
				log.Warn("comment command failed", zap.String("ticketId", ref.ID), zap.String("command", command), zap.Error(err))
			}
			return
		}
		if _, err := rc.claims.RunCommand(ctx, ref, actor, command); err != nil {
			log.Warn("comment command failed", zap.String("ticketId", ref.ID), zap.String("command", command), zap.Error(err))
		}
	})
}
