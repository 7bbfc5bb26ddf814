package lifecycle

import (
	"slices"
	"testing"
)

func TestStateOfAndLifecycleLabels(t *testing.T) {
	l := Labels{Prefix: "agent-smith"}
	cases := []struct {
		labels []string
		want   State
	}{
		{nil, Pending},
		{[]string{"bug", "agent-smith"}, Pending},
		{[]string{"agent-smith:pending"}, Pending},
		{[]string{"agent-smith:enqueued"}, Enqueued},
		{[]string{"Agent-Smith:done", "agent-smith-x:done", "other:failed"}, Pending},
		{[]string{"agent-smith:in-progress", "agent-smith:done"}, Done},
	}
	for _, c := range cases {
		if got := l.StateOf(c.labels); got != c.want {
			t.Errorf("StateOf(%q) = %s, want %s", c.labels, got, c.want)
		}
	}
	got := l.Lifecycle([]string{"bug", "agent-smith:enqueued", "agent-smith", "agent-smith:bogus", "agent-smith:done"})
	if want := []string{"agent-smith:enqueued", "agent-smith:done"}; !slices.Equal(got, want) {
		t.Errorf("Lifecycle = %q, want %q", got, want)
	}
}

func TestTransitionTableOwners(t *testing.T) {
	if err := Check(Pending, Enqueued, OwnerClaimService); err != nil {
		t.Error(err)
	}
	if err := Check(InProgress, Pending, OwnerStaleJobDetector); err != nil {
		t.Error(err)
	}
	if err := Check(InProgress, Pending, OwnerExecutor); err == nil {
		t.Error("the executor must not revert a ticket to pending")
	}
	if err := Check(Pending, Enqueued, OwnerExecutor); err == nil {
		t.Error("only the claim service enqueues")
	}
}

func TestStageLabels(t *testing.T) {
	unstaged := Labels{Prefix: "agent-smith"}
	staged := unstaged.WithStages([]string{"plan", "implement", "test"})
	if got := staged.Stage("plan"); got != "agent-smith:stage/plan" {
		t.Errorf("Stage(plan) = %q", got)
	}
	for _, c := range []struct {
		label            string
		staged, unstaged bool
	}{
		{"agent-smith:stage/plan", true, false},
		// A stage taken out of the config still names a stage label.
		{"agent-smith:stage/gone", true, false},
		{"agent-smith:stage/Plan", false, false},
		{"agent-smith:stage/", false, false},
		{"agent-smith:stage/a b", false, false},
		{"other:stage/plan", false, false},
		{"agent-smith:done", true, true},
	} {
		if got := staged.IsLifecycle(c.label); got != c.staged {
			t.Errorf("staged IsLifecycle(%q) = %v, want %v", c.label, got, c.staged)
		}
		if got := unstaged.IsLifecycle(c.label); got != c.unstaged {
			t.Errorf("unstaged IsLifecycle(%q) = %v, want %v", c.label, got, c.unstaged)
		}
	}
	labels := []string{"bug", "agent-smith:in-progress", "agent-smith:stage/plan", "agent-smith:stage/gone"}
	if got, want := staged.Lifecycle(labels), []string{"agent-smith:in-progress", "agent-smith:stage/plan", "agent-smith:stage/gone"}; !slices.Equal(got, want) {
		t.Errorf("staged Lifecycle = %q, want %q", got, want)
	}
	if got, want := unstaged.Lifecycle(labels), []string{"agent-smith:in-progress"}; !slices.Equal(got, want) {
		t.Errorf("unstaged Lifecycle = %q, want %q", got, want)
	}
	if s := staged.StateOf(labels); s != InProgress {
		t.Errorf("StateOf = %s: stage labels must not count", s)
	}
	for _, c := range []struct {
		labels []string
		want   string
	}{
		{nil, ""},
		{[]string{"agent-smith:stage/plan"}, "plan"},
		// Several: the furthest in stage order, not in label order.
		{[]string{"agent-smith:stage/test", "agent-smith:stage/plan"}, "test"},
		{[]string{"agent-smith:stage/implement", "agent-smith:stage/gone"}, "implement"},
		{[]string{"agent-smith:stage/gone"}, ""},
	} {
		if got := staged.StageOf(c.labels); got != c.want {
			t.Errorf("StageOf(%q) = %q, want %q", c.labels, got, c.want)
		}
		if got := unstaged.StageOf(c.labels); got != "" {
			t.Errorf("unstaged StageOf(%q) = %q, want none", c.labels, got)
		}
	}
	if n, ok := staged.NextStage("implement"); !ok || n != "test" {
		t.Errorf("NextStage(implement) = %q, %v", n, ok)
	}
	if _, ok := staged.NextStage("test"); ok {
		t.Error("NextStage(test): the last stage has no next")
	}
	for name, want := range map[string]bool{"plan": true, "a": true, "x-1": true, "": false, "Plan": false, "1a": false,
		"a_b": false, "a/b": false, "abcdefghijabcdefghijabcdefghijab": true, "abcdefghijabcdefghijabcdefghijabc": false} {
		if got := ValidStageName(name); got != want {
			t.Errorf("ValidStageName(%q) = %v, want %v", name, got, want)
		}
	}
}

// AwaitingApproval ranks between InProgress and Done although its number
// comes last; the decision labels are lifecycle labels but no state.
func TestAwaitingApprovalRanksBetweenInProgressAndDone(t *testing.T) {
	l := Labels{Prefix: DefaultLabelPrefix}
	for _, c := range []struct {
		labels []string
		want   State
	}{
		{[]string{l.Label(InProgress), l.Label(AwaitingApproval)}, AwaitingApproval},
		{[]string{l.Label(AwaitingApproval), l.Label(Enqueued)}, AwaitingApproval},
		{[]string{l.Label(AwaitingApproval), l.Label(Done)}, Done},
		{[]string{l.Label(Failed), l.Label(AwaitingApproval)}, Failed},
		{[]string{l.Approved(), l.Rejected()}, Pending},
	} {
		if got := l.StateOf(c.labels); got != c.want {
			t.Errorf("StateOf(%q) = %s, want %s", c.labels, got, c.want)
		}
	}
	if Failed != 4 || AwaitingApproval != 5 || AwaitingApproval.Terminal() {
		t.Errorf("numbers %d %d, terminal %v: the old states keep their numbers, AwaitingApproval is not terminal", Failed, AwaitingApproval, AwaitingApproval.Terminal())
	}
	if s, err := ParseState("awaiting-approval"); err != nil || s != AwaitingApproval {
		t.Errorf("ParseState = %v, %v", s, err)
	}
	for _, label := range []string{l.Approved(), l.Rejected()} {
		if !l.IsLifecycle(label) {
			t.Errorf("%q is not a lifecycle label: a move would leave it behind", label)
		}
	}
	if approve, ok := l.Decision("agent-smith:approved"); !ok || !approve {
		t.Error("agent-smith:approved does not read as an approval")
	}
	if approve, ok := l.Decision("agent-smith:rejected"); !ok || approve {
		t.Error("agent-smith:rejected does not read as a rejection")
	}
	if _, ok := l.Decision("agent-smith:done"); ok {
		t.Error("a state label reads as a decision")
	}
}
