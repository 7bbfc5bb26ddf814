package platforms

import "fmt"

// LabelConflict explains why got, the labels a tracker answered a label
// write with, is not what a lone write of (remove, add) on snapshot would
// leave, or returns "". It is the check of a platform whose label write is
// last-write-wins and names single labels (GitLab's add_labels and
// remove_labels, Jira's update.labels): the write went through, and only
// its answer shows whether another writer moved the lifecycle meanwhile.
// prefix is the lifecycle labels' ("agent-smith:"). Foreign edits of labels
// outside the lifecycle, added or removed, are tolerated: they do not
// change the ticket's state, and the write has kept them.
func LabelConflict(platform, prefix string, snapshot, remove, add, got []string) string {
	for _, l := range snapshot {
		if !ContainsLabel(platform, add, l) && HasLabelPrefix(platform, l, prefix) && !ContainsLabel(platform, remove, l) && !ContainsLabel(platform, got, l) {
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
		if !ContainsLabel(platform, add, l) && !ContainsLabel(platform, snapshot, l) && HasLabelPrefix(platform, l, prefix) {
			return fmt.Sprintf("lifecycle label %q appeared from another writer", l)
		}
	}
	return ""
}
