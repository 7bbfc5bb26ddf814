package lifecycle

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// Move is one lifecycle transition as written: from and to the state, and
// the stage the ticket is in after it. Stage is "" for a project without
// stages and for a move to Done, which shows no stage.
type Move struct {
	From, To State
	Stage    string
}

// Relabel is the one lifecycle label write: every component that moves a
// ticket (claim, executor, StaleJobDetector, LabelRepairer, …) writes
// through it, so the transition table (Check) is consulted before every
// write and none can skip it. A refused write is ErrIllegalTransition and
// reaches no tracker.
//
// The write removes every other lifecycle label (stage labels included)
// and adds m.To's label and m.Stage's, in one Relabel of the tracker,
// leaving other labels alone: a stage move is one write. A transition to
// the same state (the LabelRepairer's) adds only what is missing and
// removes the other lifecycle labels (but a decision label on a ticket
// that stays AwaitingApproval). The caller has read t under the lock
// that owns the transition (claim lock or run lock) and has called its
// fence, if any.
func Relabel(ctx context.Context, tr platforms.Tracker, labels Labels, t *platforms.Ticket, m Move, owner Owner) (*platforms.Ticket, error) {
	if err := Check(m.From, m.To, owner); err != nil {
		return nil, err
	}
	add := []string{labels.Label(m.To)}
	if m.Stage != "" {
		if !labels.IsStage(m.Stage) {
			return nil, fmt.Errorf("lifecycle: %w: stage %q is not one of the project's stages %q", ErrIllegalTransition, m.Stage, labels.Stages)
		}
		add = append(add, labels.Stage(m.Stage))
	}
	remove := labels.Lifecycle(t.Labels)
	if m.From == m.To {
		remove = slices.DeleteFunc(remove, func(l string) bool {
			// A repair of a parked ticket leaves a person's decision
			// for the ApprovalGate, whose move removes it.
			if _, decision := labels.Decision(l); decision && m.To == AwaitingApproval {
				return true
			}
			return platforms.ContainsLabel(t.Ref.Platform, add, l)
		})
		add = slices.DeleteFunc(add, t.HasLabel)
	}
	return tr.Relabel(ctx, t, remove, add...)
}

// AddLabel adds label, which must not be a lifecycle label (those move only
// through Relabel and the transition table), leaving every other label
// alone: the escalation label, say.
func AddLabel(ctx context.Context, tr platforms.Tracker, labels Labels, t *platforms.Ticket, label string) (*platforms.Ticket, error) {
	if labels.IsLifecycle(label) {
		return nil, fmt.Errorf("lifecycle: %w: %q is a lifecycle label; only a transition adds it", ErrIllegalTransition, label)
	}
	return tr.Relabel(ctx, t, nil, label)
}

// RemoveDecision removes a decision label (Labels.Decision) the
// ApprovalGate refused or found nothing to decide with, leaving every
// other label alone: it moves no state, so the table is not asked.
func RemoveDecision(ctx context.Context, tr platforms.Tracker, labels Labels, t *platforms.Ticket, label string) (*platforms.Ticket, error) {
	if _, ok := labels.Decision(label); !ok {
		return nil, fmt.Errorf("lifecycle: %w: %q is not a decision label", ErrIllegalTransition, label)
	}
	return tr.Relabel(ctx, t, []string{label})
}
