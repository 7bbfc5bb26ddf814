package lifecycle

import (
	"encoding/json"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// EventKind says what an Event records.
type EventKind string

const (
	// EventTransition is a lifecycle label write (or, for the reconciler's
	// Enqueued → Enqueued, a re-push standing in for one).
	EventTransition EventKind = "transition"
	// EventClaim is a claim that did not transition the ticket:
	// AlreadyClaimed, NotEligible or PreconditionFailed. A successful claim
	// is an EventTransition with outcome "claimed".
	EventClaim EventKind = "claim"
	// EventRepair is a housekeeping repair that is not itself a label write
	// (requeueing a dead instance's processing list, a Redis-loss sweep).
	EventRepair EventKind = "repair"
	// EventStuck flags a ticket that has stayed Enqueued or InProgress
	// longer than its project's threshold; it changes nothing by itself.
	EventStuck EventKind = "stuck"
	// EventRefusal is a write the tracker refused for good
	// (platforms.ErrRejected): Op says what was refused, Status the
	// tracker's answer, Reason its message (Refusals).
	EventRefusal EventKind = "refusal"
	// EventDecision is a person's decision on a ticket awaiting approval
	// (lifecycle/gate): Outcome approved, rejected, cancelled or refused,
	// Reason naming who; a decision that moves the ticket is also its
	// EventTransition.
	EventDecision EventKind = "decision"
)

// Event is one thing that happened to a ticket. Every transition, claim
// outcome and repair produces one, and the same record feeds the log line,
// the metrics and the audit stream, so the three can never disagree.
type Event struct {
	Kind      EventKind     `json:"kind"`
	At        time.Time     `json:"at"`
	Ref       platforms.Ref `json:"ref"`
	From      State         `json:"from"`
	To        State         `json:"to"`
	Outcome   string        `json:"outcome"`
	Attempt   int           `json:"attempt,omitempty"`
	Owner     Owner         `json:"owner,omitempty"`
	Instance  string        `json:"instance,omitempty"`
	Source    string        `json:"source,omitempty"`
	RequestID string        `json:"request_id,omitempty"`
	Reason    string        `json:"reason,omitempty"`
	// Stage is the stage the run was in, for a staged project's run
	// transitions by the executor (agentsmith_stage_duration_seconds); for
	// the ApprovalGate's decisions and transitions, the gated stage the
	// ticket awaited.
	Stage string `json:"stage,omitempty"`
	// Actor is who made a decision (the ApprovalGate's EventDecision and
	// transitions): a tracker login as the tracker named them, or an
	// operator ("operator:..."). Empty for a deadline's.
	Actor  string  `json:"actor,omitempty"`
	Holder *Holder `json:"holder,omitempty"`
	// Wait is how long the request sat in the queue (Enqueued → InProgress).
	// JSON: wait_ms, as every duration (see MarshalJSON).
	Wait time.Duration `json:"-"`
	// Run is how long the pipeline ran (transitions out of InProgress);
	// JSON run_ms.
	Run time.Duration `json:"-"`
	// Lead is the time from the claim to this terminal transition (Done or
	// Failed by the executor), when the request knew its claim time;
	// JSON lead_ms.
	Lead time.Duration `json:"-"`
	// ApprovalWait is how long the ticket awaited approval, from its park
	// (keys.GateParked) to the decision or deadline that moved it out of
	// AwaitingApproval (agentsmith_approval_wait_seconds); JSON
	// approval_wait_ms.
	ApprovalWait time.Duration `json:"-"`
	// Retrigger marks a claim of a ticket that had reached Done or Failed
	// before (within keys.FinishedTTL): someone asked for another run.
	Retrigger bool `json:"retrigger,omitempty"`
	// Op and Status describe an EventRefusal: what the daemon was doing
	// (RefusalOp*) and the tracker's HTTP status.
	Op     string `json:"op,omitempty"`
	Status int    `json:"status,omitempty"`
}

// eventJSON is Event as JSON: durations in milliseconds under _ms names,
// like the audit stream's fields and every other JSON the daemon and
// agentsmithctl print (Go's default would be nanoseconds).
type eventJSON struct {
	eventAlias
	WaitMS int64 `json:"wait_ms,omitempty"`
	RunMS  int64 `json:"run_ms,omitempty"`
	LeadMS int64 `json:"lead_ms,omitempty"`
	// ApprovalWaitMS is ApprovalWait.
	ApprovalWaitMS int64 `json:"approval_wait_ms,omitempty"`
}

type eventAlias Event // Event without its methods, so MarshalJSON does not recurse

// MarshalJSON writes the durations as wait_ms, run_ms, lead_ms and
// approval_wait_ms.
func (e Event) MarshalJSON() ([]byte, error) {
	return json.Marshal(eventJSON{eventAlias(e), e.Wait.Milliseconds(), e.Run.Milliseconds(), e.Lead.Milliseconds(), e.ApprovalWait.Milliseconds()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *Event) UnmarshalJSON(b []byte) error {
	var j eventJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = Event(j.eventAlias)
	e.Wait, e.Run, e.Lead = time.Duration(j.WaitMS)*time.Millisecond, time.Duration(j.RunMS)*time.Millisecond, time.Duration(j.LeadMS)*time.Millisecond
	e.ApprovalWait = time.Duration(j.ApprovalWaitMS) * time.Millisecond
	return nil
}

// Observer receives events. Observe is called on the hot path of claims and
// runs: it must not block (buffer, and drop with a counter, if it must).
type Observer interface {
	Observe(Event)
}

// Observers fans an event out to several observers.
type Observers []Observer

// Observe implements Observer.
func (o Observers) Observe(ev Event) {
	for _, x := range o {
		if x != nil {
			x.Observe(ev)
		}
	}
}

// Emit logs ev in the daemon's transition log format and hands it to obs
// (which may be nil). Every component that changes a ticket reports through
// here, so "every transition logs ticketId, platform, from, to, outcome"
// holds by construction.
func Emit(log *zap.Logger, obs Observer, ev Event) {
	if ev.At.IsZero() {
		ev.At = wallclock.Now().UTC()
	}
	fields := []zap.Field{
		zap.String("ticketId", ev.Ref.ID), zap.String("platform", ev.Ref.Platform), zap.String("project", ev.Ref.Project),
		zap.String("from", ev.From.String()), zap.String("to", ev.To.String()), zap.String("outcome", ev.Outcome),
		zap.Int("attempt", ev.Attempt),
	}
	if ev.Owner != "" {
		fields = append(fields, zap.String("owner", string(ev.Owner)))
	}
	if ev.Source != "" {
		fields = append(fields, zap.String("source", ev.Source))
	}
	if ev.RequestID != "" {
		fields = append(fields, zap.String("requestId", ev.RequestID))
	}
	if ev.Reason != "" {
		fields = append(fields, zap.String("reason", ev.Reason))
	}
	if ev.Holder != nil {
		fields = append(fields, zap.String("holder", ev.Holder.Instance), zap.String("holderSource", ev.Holder.Source),
			zap.Time("holderSince", ev.Holder.Since))
	}
	if ev.Wait > 0 {
		fields = append(fields, zap.Duration("queueWait", ev.Wait))
	}
	if ev.Run > 0 {
		fields = append(fields, zap.Duration("runTime", ev.Run))
	}
	if ev.Lead > 0 {
		fields = append(fields, zap.Duration("leadTime", ev.Lead))
	}
	if ev.ApprovalWait > 0 {
		fields = append(fields, zap.Duration("approvalWait", ev.ApprovalWait))
	}
	if ev.Stage != "" {
		fields = append(fields, zap.String("stage", ev.Stage))
	}
	if ev.Actor != "" {
		fields = append(fields, zap.String("actor", ev.Actor))
	}
	if ev.Retrigger {
		fields = append(fields, zap.Bool("retrigger", true))
	}
	if ev.Op != "" {
		fields = append(fields, zap.String("op", ev.Op), zap.Int("status", ev.Status))
	}
	log.Info(string(ev.Kind), fields...)
	if obs != nil {
		obs.Observe(ev)
	}
}
