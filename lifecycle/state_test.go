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
