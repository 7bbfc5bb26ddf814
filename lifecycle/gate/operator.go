package gate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// OperatorPrefix starts the actor of an operator's decision
// ("operator:agentsmithctl@host", "operator:status page"): the audit and
// the ticket's reply say an operator decided, not a tracker user.
const OperatorPrefix = "operator:"

// Operator is the actor of a decision by the operator named name.
func Operator(name string) string { return OperatorPrefix + name }

// ErrNotParked is what CancelAsOperator returns for a ticket that does
// not await approval: nothing was changed or said on the ticket, and the
// caller cancels its request or run instead.
var ErrNotParked = errors.New("not awaiting approval")

// ErrUnread is what CancelAsOperator returns (wrapped) when the ticket
// could not be read: nothing was changed.
var ErrUnread = errors.New("ticket not read")

// DecideAsOperator carries out an operator's decision (Approve or Reject)
// on ref, as Decide does, without the gate's approvers and
// distinct_from_trigger checks: an operator (agentsmithctl, the status
// page) holds the tracker token or the status token, with which the
// decision labels could be written anyway. The decision is recorded,
// audited and answered on the ticket with actor, which should be Operator's.
func (g *Gate) DecideAsOperator(ctx context.Context, ref platforms.Ref, actor string, d Decision) (claim.CommandResult, error) {
	res := claim.CommandResult{Command: d.Kind}
	if d.Kind != Approve && d.Kind != Reject {
		return res, fmt.Errorf("gate %s: operator decision %q: want %s or %s", ref, d.Kind, Approve, Reject)
	}
	p, s, stage, err := g.parkedStage(ctx, ref)
	if err != nil {
		return res, err
	}
	if s != lifecycle.AwaitingApproval {
		// Said to the operator only: nothing asked on the ticket.
		res.Outcome, res.Reason = claim.CommandNoop, "nothing awaits approval: state is "+s.String()
		return res, nil
	}
	return g.decideLocked(ctx, p, ref, record{Decision: d, Actor: asOperator(actor), Stage: stage, Max: approvalOf(p, stage).MaxRejections})
}

// CancelAsOperator fails a parked ticket on an operator's cancel
// (agentsmithctl cancel, the status page's button) as CancelParked does
// on `/agent-smith cancel`: under the claim lock, one comment naming
// actor (an Operator's) and reason, AwaitingApproval → Failed, audited,
// the gate's records forgotten. A ticket not AwaitingApproval is
// ErrNotParked.
func (g *Gate) CancelAsOperator(ctx context.Context, ref platforms.Ref, actor, reason string) (claim.CommandResult, error) {
	p, s, _, err := g.parkedStage(ctx, ref)
	if err != nil {
		return claim.CommandResult{Command: Cancel}, err
	}
	if s != lifecycle.AwaitingApproval {
		return claim.CommandResult{Command: Cancel}, fmt.Errorf("gate %s: %w: state is %s", ref, ErrNotParked, s)
	}
	return g.decideLocked(ctx, p, ref, record{Decision: Decision{Kind: Cancel, Reason: reason}, Actor: asOperator(actor)})
}

// parkedStage is ref's project, state and stage, read afresh.
func (g *Gate) parkedStage(ctx context.Context, ref platforms.Ref) (*lifecycle.Project, lifecycle.State, string, error) {
	p, ok := g.claims.Projects().Lookup(ref)
	if !ok {
		return nil, 0, "", fmt.Errorf("gate %s: unknown project %q", ref, ref.Project)
	}
	t, err := p.Tracker.Get(ctx, ref)
	if err != nil {
		return nil, 0, "", fmt.Errorf("gate %s: %w: %w", ref, ErrUnread, err)
	}
	labels := p.Labels(g.claims.Labels())
	return p, labels.StateOf(t.Labels), labels.StageOf(t.Labels), nil
}

func asOperator(actor string) string {
	if strings.HasPrefix(actor, OperatorPrefix) {
		return actor
	}
	return Operator(actor)
}

// cancelCause is why a cancel of a parked ticket failed it, as its
// comment and the audit say.
func cancelCause(rec record) string {
	if !strings.HasPrefix(rec.Actor, OperatorPrefix) {
		return claim.CommandCause(rec.Actor) + " while awaiting approval"
	}
	why := "cancelled by " + claim.SafeName(rec.Actor) + " while awaiting approval"
	if r := strings.TrimSpace(lifecycle.StripControl(rec.Reason)); r != "" {
		why += ": " + r
	}
	return why
}
