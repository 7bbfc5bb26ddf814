package platforms_test

import (
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// A label write's answer conflicts only where another writer moved a
// state or stage label: a person's edits of other labels, a decision label
// among them, are kept and tolerated.
func TestLabelConflict(t *testing.T) {
	const (
		prefix   = "agent-smith:"
		pending  = "agent-smith:pending"
		enqueued = "agent-smith:enqueued"
		failed   = "agent-smith:failed"
		parked   = "agent-smith:awaiting-approval"
		running  = "agent-smith:in-progress"
		approved = "agent-smith:approved"
	)
	moving := platforms.Moving{Prefix: prefix, States: []string{pending, enqueued, running, parked, "agent-smith:done", failed}}
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
		{"a person's decision before a park", []string{running, "agent-smith:stage/plan"}, []string{running, "agent-smith:stage/plan"},
			[]string{parked, "agent-smith:stage/build"}, []string{parked, "agent-smith:stage/build", approved}, ""},
		{"a person's decision taken off", []string{running, approved}, []string{running}, []string{parked}, []string{parked}, ""},
		{"a label with the prefix the lifecycle does not read", []string{pending}, []string{pending}, []string{enqueued},
			[]string{enqueued, "agent-smith:someday"}, ""},
		{"foreign stage label", []string{running, "agent-smith:stage/plan"}, []string{running, "agent-smith:stage/plan"},
			[]string{parked, "agent-smith:stage/build"}, []string{parked, "agent-smith:stage/build", "agent-smith:stage/deploy"}, "appeared from another writer"},
		{"case-folding platform", []string{pending}, []string{pending}, []string{enqueued}, []string{"Agent-Smith:Enqueued"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			platform := "jira"
			if strings.HasPrefix(c.name, "case-folding") {
				platform = "azuredevops"
			}
			got := platforms.LabelConflict(platform, moving, c.snapshot, c.remove, c.add, c.got)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("LabelConflict = %q, want %q", got, c.want)
			}
		})
	}
}

// A tracker built without the state labels counts every label with the
// prefix, a decision label among them.
func TestLabelConflictWithoutStates(t *testing.T) {
	moving := platforms.Moving{Prefix: "agent-smith:"}
	got := platforms.LabelConflict("gitlab", moving, []string{"agent-smith:in-progress"}, []string{"agent-smith:in-progress"},
		[]string{"agent-smith:awaiting-approval"}, []string{"agent-smith:awaiting-approval", "agent-smith:approved"})
	if !strings.Contains(got, "appeared from another writer") {
		t.Errorf("LabelConflict = %q, want a foreign label", got)
	}
}
