package lifecycle

import (
	"errors"
	"fmt"
)

// Owner names the component that is allowed to make a transition. Each
// transition has exactly one owner, so a label write can be traced to the
// code path (and log line) that made it.
type Owner string

const (
	OwnerClaimService       Owner = "TicketClaimService"
	OwnerExecutor           Owner = "PipelineExecutor"
	OwnerStaleJobDetector   Owner = "StaleJobDetector"
	OwnerEnqueuedReconciler Owner = "EnqueuedReconciler"
	OwnerLabelRepairer      Owner = "LabelRepairer"
	// OwnerApprovalGate decides a ticket parked in AwaitingApproval
	// (lifecycle/gate): a person's approval, rejection or cancellation.
	OwnerApprovalGate Owner = "ApprovalGate"
)

// Transition is one row of the specification's "who owns each transition".
type Transition struct {
	From, To State
	Owner    Owner
	When     string
}

// Transitions is the specification's table, plus the executor's hand-back
// (InProgress → Enqueued) used on graceful shutdown and for a retry, the
// attempt limit (Pending → Failed) used when a reverted ticket has no
// attempts left, and cancellation of a request before its pipeline started
// (Enqueued → Failed), and a person's retry of a failed ticket
// (Failed → Enqueued, claim.Service.Retry).
var Transitions = []Transition{
	{Pending, Enqueued, OwnerClaimService, "webhook or poll; pre-checks pass; claim lock acquired"},
	{Enqueued, InProgress, OwnerExecutor, "consumer took the request, before the pipeline starts"},
	{InProgress, Done, OwnerExecutor, "the pipeline succeeded"},
	{InProgress, Failed, OwnerExecutor, "the pipeline failed, or was cancelled; comment posted first"},
	{Enqueued, Failed, OwnerExecutor, "cancelled before it ran; comment posted first"},
	{InProgress, Enqueued, OwnerExecutor, "graceful shutdown handed the ticket back"},
	{InProgress, Enqueued, OwnerExecutor, "a retryable failure with attempts left: the next attempt waits out its backoff in the delayed set"},
	{InProgress, Enqueued, OwnerExecutor, "stage s succeeded; the next stage has no gate: the stage labels move with the state, the next stage's request is pushed under the run's lock"},
	{InProgress, Enqueued, OwnerExecutor, "stage s succeeded; the next stage has a timer gate (after): its start time recorded and posted first, the stage labels move with the state, the next stage's request waits out after in the delayed set, holding no consumer slot"},
	{InProgress, Enqueued, OwnerExecutor, "stage s failed for good and its on_failure sends the ticket back to an earlier stage (fewer than on_failure.max times so far): the stage label moves back with the state, s's result or output kept for that stage, its request pushed under the run's lock"},
	{InProgress, Pending, OwnerStaleJobDetector, "no heartbeat, or the owning instance is gone"},
	{Pending, Failed, OwnerStaleJobDetector, "a reverted ticket has used its max attempts"},
	{Pending, Failed, OwnerClaimService, "a claim finds the ticket's attempts used up"},
	{Failed, Enqueued, OwnerClaimService, "a retry command (comment or agentsmithctl retry) on a failed ticket that keeps its trigger label; fresh attempt count"},
	{Enqueued, Enqueued, OwnerEnqueuedReconciler, "Enqueued, but no queue entry and no in-flight owner"},
	// A write that adds the new label before removing the old ones (GitHub)
	// and is cut off leaves two lifecycle labels; StateOf reads the further
	// state, and the repair removes the others without changing it.
	{Enqueued, Enqueued, OwnerLabelRepairer, "two lifecycle labels left by an interrupted write, no run or claim holds the ticket"},
	{InProgress, InProgress, OwnerLabelRepairer, "two lifecycle labels left by an interrupted write, no run or claim holds the ticket"},
	{Done, Done, OwnerLabelRepairer, "two lifecycle labels left by an interrupted write, no run or claim holds the ticket"},
	{Failed, Failed, OwnerLabelRepairer, "two lifecycle labels left by an interrupted write, no run or claim holds the ticket"},
	// Approval gates (a stage's gate: approval): the ticket waits between
	// two stages with no run, lock or heartbeat.
	{InProgress, AwaitingApproval, OwnerExecutor, "stage s succeeded, or failed and is sent back (on_failure), into a stage with an approval gate: its result posted for review first, the ticket parked with the gated stage's label"},
	{AwaitingApproval, Enqueued, OwnerApprovalGate, "approved by an approver: the gated stage's request pushed"},
	{AwaitingApproval, Enqueued, OwnerApprovalGate, "rejected by an approver: back to the previous stage, which re-runs with the reviewer's text ($AGENTSMITH_REVIEW)"},
	{AwaitingApproval, Failed, OwnerApprovalGate, "rejected more than max_rejections times, or cancelled (a person's or an operator's cancel, or the ticket closed or its trigger label removed); comment posted first"},
	{AwaitingApproval, Failed, OwnerApprovalGate, "the gate's timeout passed with on_timeout: fail (housekeeping's GateKeeper); comment posted first"},
	{AwaitingApproval, AwaitingApproval, OwnerLabelRepairer, "two lifecycle labels left by an interrupted write, no run or claim holds the ticket"},
}

// ErrIllegalTransition marks a write the table refuses: no row lets its
// owner move a ticket between those states. It is a programming error,
// never retried.
var ErrIllegalTransition = errors.New("illegal transition")

// Check reports whether owner may move a ticket from → to; a refusal wraps
// ErrIllegalTransition. Relabel asks it before every lifecycle label write.
func Check(from, to State, owner Owner) error {
	for _, t := range Transitions {
		if t.From == from && t.To == to && t.Owner == owner {
			return nil
		}
	}
	return fmt.Errorf("lifecycle: %w: %s may not move a ticket %s → %s", ErrIllegalTransition, owner, from, to)
}
