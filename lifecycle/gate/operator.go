package gate

import (
	"context"
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
	if !strings.HasPrefix(actor, OperatorPrefix) {
		actor = Operator(actor)
	}
	p, ok := g.claims.Projects().Lookup(ref)
	if !ok {
		return res, fmt.Errorf("gate %s: unknown project %q", ref, ref.Project)
	}
	t, err := p.Tracker.Get(ctx, ref)
	if err != nil {
		return res, fmt.Errorf("gate %s: read ticket: %w", ref, err)
	}
	labels := p.Labels(g.claims.Labels())
	if s := labels.StateOf(t.Labels); s != lifecycle.AwaitingApproval {
		// Said to the operator only: nothing asked on the ticket.
		res.Outcome, res.Reason = claim.CommandNoop, "nothing awaits approval: state is "+s.String()
		return res, nil
	}
	stage := labels.StageOf(t.Labels)
	return g.decideLocked(ctx, p, ref, record{Decision: d, Actor: actor, Stage: stage, Max: approvalOf(p, stage).MaxRejections})
}
