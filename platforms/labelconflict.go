package platforms

import "fmt"

// Moving tells the labels whose move by another writer during a label
// write means the write raced it (LabelConflict): the labels the lifecycle
// reads a ticket's course from.
type Moving struct {
	// Prefix is the lifecycle labels' prefix and ":" ("agent-smith:").
	Prefix string
	// States are the lifecycle's state labels ("agent-smith:enqueued", …,
	// TrackerOptions.Lifecycle). Empty (a tracker built without them),
	// every label with Prefix counts.
	States []string
}

// stageInfix begins a stage label after the prefix ("agent-smith:stage/plan",
// lifecycle.Labels.Stage).
const stageInfix = "stage/"

// Has reports whether label counts: a state label (the state the ticket is
// in) or a stage label (the stage it runs next: the lifecycle reads the
// furthest of several, so one added meanwhile would send the ticket to a
// stage the write did not choose). A decision label ("agent-smith:approved")
// is a person's input for the approval gate, which the write keeps and the
// gate reads; it moves no state, so a person deciding between the
// executor's review comment and its park write is no race. Other labels
// with the prefix show nothing the lifecycle reads.
func (m Moving) Has(platform, label string) bool {
	if !HasLabelPrefix(platform, label, m.Prefix) {
		return false
	}
	return len(m.States) == 0 || ContainsLabel(platform, m.States, label) || HasLabelPrefix(platform, label, m.Prefix+stageInfix)
}

// LabelConflict explains why got, the labels a tracker answered a label
// write with, is not what a lone write of (remove, add) on snapshot would
// leave, or returns "". It is the check of a platform whose label write is
// last-write-wins and names single labels (GitLab's add_labels and
// remove_labels, Jira's update.labels): the write went through, and only
// its answer shows whether another writer moved the lifecycle meanwhile.
// moving tells the labels whose move counts. A person's edits of other
// labels, added or removed, are tolerated: they do not change the ticket's
// state or stage, and the write has kept them.
func LabelConflict(platform string, moving Moving, snapshot, remove, add, got []string) string {
	for _, l := range snapshot {
		if !ContainsLabel(platform, add, l) && moving.Has(platform, l) && !ContainsLabel(platform, remove, l) && !ContainsLabel(platform, got, l) {
			return fmt.Sprintf("label %q was removed by another writer", l)
		}
	}
	for _, l := range add {
		if !ContainsLabel(platform, got, l) {
			return fmt.Sprintf("label %q is missing after the write", l)
		}
	}
	for _, l := range got {
		if ContainsLabel(platform, remove, l) {
			return fmt.Sprintf("label %q is present after the write removed it", l)
		}
		if !ContainsLabel(platform, add, l) && !ContainsLabel(platform, snapshot, l) && moving.Has(platform, l) {
			return fmt.Sprintf("lifecycle label %q appeared from another writer", l)
		}
	}
	return ""
}
