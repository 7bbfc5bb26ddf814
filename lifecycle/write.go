package lifecycle

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// Relabel is the one lifecycle label write: every component that moves a
// ticket (claim, executor, StaleJobDetector, LabelRepairer, …) writes
// through it, so the transition table (Check) is consulted before every
// write and none can skip it. A refused write is ErrIllegalTransition and
// reaches no tracker.
//
// The write removes every other lifecycle label and adds to's label, in one
// Relabel of the tracker, leaving other labels alone. A transition to the
// same state (the LabelRepairer's) only removes the lifecycle labels other
// than the state's. The caller has read t under the lock that owns the
// transition (claim lock or run lock) and has called its fence, if any.
func Relabel(ctx context.Context, tr platforms.Tracker, labels Labels, t *platforms.Ticket, from, to State, owner Owner) (*platforms.Ticket, error) {
	if err := Check(from, to, owner); err != nil {
		return nil, err
	}
	remove, add := labels.Lifecycle(t.Labels), labels.Label(to)
	if from == to && t.HasLabel(add) {
		remove = slices.DeleteFunc(remove, func(l string) bool { return platforms.SameLabel(t.Ref.Platform, l, add) })
		add = ""
	}
	return tr.Relabel(ctx, t, remove, add)
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
