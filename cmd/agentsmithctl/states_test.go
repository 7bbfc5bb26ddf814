package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/astguard"
	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// stateCopies lists the string literals in the non-test Go files of dir
// that spell a lifecycle state name, alone or in a list ("in-progress, "). The CLI offers and parses the states lifecycle
// defines; a copied list would go on offering a renamed state.
func stateCopies(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	for _, s := range lifecycle.AllStates {
		names = append(names, s.String())
	}
	var out []string
	astguard.Walk(t, dir, astguard.Options{Shallow: true}, func(f *astguard.File) {
		out = append(out, f.Literals(func(v string) bool {
			return slices.Contains(names, v) || strings.Contains(v, lifecycle.InProgress.String()+", ")
		})...)
	})
	return out
}

// agentsmithctl names the lifecycle states through lifecycle, never by a
// literal of its own.
func TestCLIStatesComeFromLifecycle(t *testing.T) {
	t.Parallel()
	if v := stateCopies(t, "."); len(v) > 0 {
		t.Errorf("state names spelled in cmd/agentsmithctl; use lifecycle.AllStates:\n%s", strings.Join(v, "\n"))
	}
}

// The check finds a state alone and in a list, and leaves tests alone.
func TestStateCopiesFindsCopies(t *testing.T) {
	t.Parallel()
	astguard.Finds(t, stateCopies, map[string]string{
		"bad.go":     "package main\nvar a = []string{\"done\", \"x\"}\nvar b = \"one of enqueued, in-progress, done\"\n",
		"ok_test.go": "package main\nvar s = \"failed\"\n",
	}, `bad.go:2: "done"`, `bad.go:3: "one of enqueued, in-progress, done"`)
}
