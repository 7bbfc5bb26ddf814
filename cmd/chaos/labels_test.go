package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/astguard"
	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// labelCopies lists the string literals in the non-test Go files under root
// that spell a lifecycle label, its prefix or a state name. The chaos run
// reads a ticket's labels as the daemon does only if it reads them with the
// daemon's code (lifecycle.Labels); a copy of the prefix, of the state
// order or of StateOf can drift from the daemon and misjudge a write.
func labelCopies(t *testing.T, root string) []string {
	t.Helper()
	var names []string
	for _, s := range lifecycle.AllStates {
		names = append(names, s.String())
	}
	var out []string
	astguard.Walk(t, root, astguard.Options{}, func(f *astguard.File) {
		out = append(out, f.Literals(func(v string) bool {
			return v == lifecycle.DefaultLabelPrefix || strings.HasPrefix(v, lifecycle.DefaultLabelPrefix+":") || slices.Contains(names, v)
		})...)
	})
	return out
}

// The chaos harness names no lifecycle label, prefix or state itself: it
// reads labels through lifecycle.Labels, so its verdicts follow the daemon.
func TestChaosReadsLabelsThroughLifecycle(t *testing.T) {
	if v := labelCopies(t, "."); len(v) > 0 {
		t.Errorf("lifecycle labels or states spelled in cmd/chaos; use lifecycle.Labels and lifecycle's states:\n%s", strings.Join(v, "\n"))
	}
}

// The check finds a state name, a label and the prefix, and leaves tests
// alone.
func TestLabelCopiesFindsCopies(t *testing.T) {
	astguard.Finds(t, labelCopies, map[string]string{
		"bad.go":     "package main\nvar order = []string{\"pending\", \"done\"}\nvar l = \"agent-smith:\" + order[0]\nvar p = \"agent-smith\"\nvar ok = \"pendingx\"\n",
		"ok_test.go": "package main\nvar s = \"agent-smith:done\"\n",
	}, `bad.go:2: "pending"`, `bad.go:2: "done"`, `bad.go:3: "agent-smith:"`, `bad.go:4: "agent-smith"`)
}
