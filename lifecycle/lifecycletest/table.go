package lifecycletest

import (
	"slices"
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// WithoutTransition takes the row from → to by owner out of
// lifecycle.Transitions until the test ends, so a test can show that a write
// path consults the table: without its row the write must be refused. Tests
// that use it must not run in parallel with others reading the table.
func WithoutTransition(t testing.TB, from, to lifecycle.State, owner lifecycle.Owner) {
	t.Helper()
	saved := lifecycle.Transitions
	rows := slices.DeleteFunc(slices.Clone(saved), func(r lifecycle.Transition) bool {
		return r.From == from && r.To == to && r.Owner == owner
	})
	if len(rows) == len(saved) {
		t.Fatalf("no transition %s → %s owned by %s to take out", from, to, owner)
	}
	lifecycle.Transitions = rows
	t.Cleanup(func() { lifecycle.Transitions = saved })
}
