package lifecycle

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// Trigger sources recorded on a PipelineRequest and in logs.
const (
	SourceWebhook   = "webhook"
	SourcePoll      = "poll"
	SourceReclaim   = "reclaim"   // StaleJobDetector reverted a dead run
	SourceReconcile = "reconcile" // EnqueuedReconciler re-pushed a lost request
	SourceHandBack  = "handback"  // graceful shutdown handed a run back
	SourceSweep     = "sweep"     // TriggerSweeper found a trigger no webhook brought in
	SourceRetry     = "retry"     // the executor retried a failed attempt after its backoff
	SourceStage     = "stage"     // the executor enqueued the next stage after a stage succeeded
	SourceGate      = "gate"      // the ApprovalGate enqueued a stage a person approved or rejected
)

// PipelineRequest is the queue entry. It is deliberately small: nothing in
// it is trusted as the ticket's state. The consumer reads the ticket afresh,
// or, where the tracker answers a label write with the whole ticket and
// fails a write on a ticket that changed (platforms.WholeAnswers), writes
// from Observed and checks the write's answer as it would a read.
type PipelineRequest struct {
	ID         string        `json:"id"`
	Ref        platforms.Ref `json:"ref"`
	Source     string        `json:"source"`
	Attempt    int           `json:"attempt"`
	EnqueuedAt time.Time     `json:"enqueued_at"`
	// ClaimedAt is when the claim behind this request moved the ticket out
	// of Pending: the start of its lead time. Zero for requests re-pushed by
	// repairs, whose claim is not known any more.
	ClaimedAt time.Time `json:"claimed_at,omitzero"`
	// Priority is the queue level, read from the ticket's labels at claim
	// time (lower is served first); 0 (a request from an older version)
	// means the default level. pkg/queue places entries by this field.
	Priority int `json:"priority,omitempty"`
	// PausedAside marks a request a consumer put into the delayed set
	// because its project was paused, so a resume makes exactly these due
	// at once (a retry's backoff is left alone). See PauseProject.
	PausedAside bool `json:"paused_aside,omitempty"`
	// Pool is the pool whose consumers may take the request, the
	// project's at claim time ("": DefaultPool). pkg/queue places entries
	// by this field, so every repair pushes the request back into its
	// pool's queue.
	Pool string `json:"pool,omitempty"`
	// Stage is the stage this request runs, for a project with stages ("":
	// the first stage, or a project without stages). The ticket's stage
	// label is the truth; this is what the writer of the request read
	// there.
	Stage string `json:"stage,omitempty"`
	// GuardRefusals counts the run guard's refusals in a row to start this
	// attempt's pipeline while the run was the executor's own: each hands
	// the ticket back with the same attempt, and the last allowed fails it
	// (consumer.MaxRefusedStarts).
	GuardRefusals int `json:"guard_refusals,omitempty"`
	// Observed is the ticket as the claim's write left it, from that
	// write's answer; nil on a request a repair wrote (the consumer then
	// reads the ticket).
	Observed *Observed `json:"observed,omitempty"`
}

// Observed is what a PipelineRequest's writer saw on the ticket right after
// its own write: what the consumer's next write is conditional on (the
// labels a foreign lifecycle label is recognised against, the revision
// Azure DevOps tests). Only labels and version: the consumer takes title,
// body and open state from its write's answer.
type Observed struct {
	Labels  []string `json:"labels"`
	Version string   `json:"version,omitempty"`
	// Node is the ticket's global id (GitHub's GraphQL node id), so a
	// consumer on another replica need not look it up before its write.
	Node string `json:"node,omitempty"`
}

// ObservedOf is t's Observed: its labels and version.
func ObservedOf(t *platforms.Ticket) *Observed {
	if t == nil {
		return nil
	}
	return &Observed{Labels: slices.Clone(t.Labels), Version: t.Version, Node: t.Node}
}

// Snapshot is the ticket the claim left (open and triggered, as the claim
// checked) for a write conditional on it: labels and version, no text.
func (o *Observed) Snapshot(ref platforms.Ref) *platforms.Ticket {
	return &platforms.Ticket{Ref: ref, Open: true, Labels: slices.Clone(o.Labels), Version: o.Version, Node: o.Node}
}

// Encode marshals the request for the queue.
func (r PipelineRequest) Encode() []byte {
	b, _ := json.Marshal(r) // only strings, ints and a time: cannot fail
	return b
}

// DecodeRequest parses a queue entry.
func DecodeRequest(b []byte) (PipelineRequest, error) {
	var r PipelineRequest
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("decode pipeline request: %w", err)
	}
	if r.Ref.Platform == "" || r.Ref.ID == "" || r.Ref.Project == "" {
		return r, fmt.Errorf("decode pipeline request: missing ticket ref in %q", b)
	}
	return r, nil
}
