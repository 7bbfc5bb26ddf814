package platforms_test

import (
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// A label write's answer conflicts only where another writer moved a
// lifecycle label: a person's edits of other labels are kept and
// tolerated.
func TestLabelConflict(t *testing.T) {
	const (
		prefix   = "agent-smith:"
		pending  = "agent-smith:pending"
		enqueued = "agent-smith:enqueued"
		failed   = "agent-smith:failed"
	)
	for _, c := range []struct {
		name                       string
		snapshot, remove, add, got []string
		want                       string // a part of the reason; "" for none
	}{
		{"lone write", []string{"bug", pending}, []string{pending}, []string{enqueued}, []string{"bug", enqueued}, ""},
		{"a person's other labels", []string{"bug", pending}, []string{pending}, []string{enqueued}, []string{"human", enqueued}, ""},
		{"foreign lifecycle label", []string{pending}, []string{pending}, []string{enqueued}, []string{enqueued, failed}, "appeared from another writer"},
		{"snapshot's lifecycle label removed by another", []string{pending, "agent-smith:stage/plan"}, []string{pending}, []string{enqueued},
			[]string{enqueued}, "removed by another writer"},
		{"added label taken off", []string{pending}, []string{pending}, []string{enqueued}, []string{}, "missing after the write"},
		{"removed label put back", []string{pending}, []string{pending}, []string{enqueued}, []string{pending, enqueued}, "present after the write removed it"},
		{"case-folding platform", []string{pending}, []string{pending}, []string{enqueued}, []string{"Agent-Smith:Enqueued"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			platform := "jira"
			if strings.HasPrefix(c.name, "case-folding") {
				platform = "azuredevops"
			}
			got := platforms.LabelConflict(platform, prefix, c.snapshot, c.remove, c.add, c.got)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("LabelConflict = %q, want %q", got, c.want)
			}
		})
	}
}
