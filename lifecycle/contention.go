package lifecycle

import (
	"context"

	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
)

// OutcomeRunHeld is the outcome of a request a consumer dropped because
// another run owns its ticket (a duplicate request).
const OutcomeRunHeld = "run_held"

// dropContended reports a request dropped because another run holds the
// ticket's heartbeat, naming that run's instance, trigger source and start
// (decoded from its token), so the contention can be traced to its holder.
func (e *Executor) dropContended(ctx context.Context, req PipelineRequest) {
	ev := Event{Kind: EventClaim, At: e.cfg.Clock().UTC(), Ref: req.Ref, From: Enqueued, To: InProgress,
		Outcome: OutcomeRunHeld, Attempt: req.Attempt, Owner: OwnerExecutor, Instance: e.cfg.Instance,
		Source: req.Source, RequestID: req.ID, Reason: "another run owns the ticket; request dropped"}
	if token, _, err := runstate.Holder(ctx, e.rdb, req.Ref); err == nil && token != "" {
		ev.Holder = parseOwnerToken(token)
	}
	Emit(e.log, e.cfg.Observer, ev)
}
