package lifecycletest_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/astguard"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
)

// rawLabelTrees are the trees whose tests keep lifecycle labels as
// literals: the platform adapters and the tracker emulator sit below
// lifecycle and test the label text on the wire (case, respelling, raw
// JSON).
var rawLabelTrees = []string{"platforms", "trackersim"}

// rawLabelFiles are test files elsewhere whose label literal is the thing
// tested.
var rawLabelFiles = map[string]string{
	"lifecycle/receiver/hostile_test.go": "a webhook payload fixture",
	"lifecycle/state_test.go":            "the state ↔ label mapping itself",
}

// labelLiterals lists the string literals in the test files under root,
// outside rawLabelTrees and rawLabelFiles, that equal a
// lifecycle label under the default prefix.
func labelLiterals(t *testing.T, root string) []string {
	t.Helper()
	var labels []string
	for _, s := range lifecycle.AllStates {
		labels = append(labels, lifecycletest.Label(s))
	}
	var out []string
	astguard.Walk(t, root, astguard.Options{Files: astguard.Tests, Skip: rawLabelTrees}, func(f *astguard.File) {
		if rawLabelFiles[f.Rel] != "" {
			return
		}
		out = append(out, f.Literals(func(v string) bool { return slices.Contains(labels, v) })...)
	})
	return out
}

// Tests name lifecycle labels through lifecycle (Label here, or a
// lifecycle.Labels), so a change of spelling changes them with the daemon.
func TestTestsNameLabelsThroughLifecycle(t *testing.T) {
	if v := labelLiterals(t, astguard.ModuleRoot(t)); len(v) > 0 {
		t.Errorf("lifecycle labels spelled in tests; use lifecycletest.Label(lifecycle.Done) or list the file with its reason:\n%s", strings.Join(v, "\n"))
	}
}

// The check finds a label literal in a test, and leaves non-test files,
// the raw-label trees, lifecycle's top level and labels inside longer
// text alone; a lifecycle subpackage's tests are checked.
func TestLabelLiteralsFindsCopies(t *testing.T) {
	astguard.Finds(t, labelLiterals, map[string]string{
		"housekeeping/a_test.go":          "package housekeeping\nvar a = []string{\"agent-smith\", \"agent-smith:done\"}\nvar b = `{\"labels\":[\"agent-smith:done\"]}`\n",
		"housekeeping/a.go":               "package housekeeping\nvar a = \"agent-smith:done\"\n",
		"lifecycle/runstate/r_test.go":    "package runstate\nvar a = \"agent-smith:failed\"\n",
		"lifecycle/s_test.go":             "package lifecycle\nvar a = \"agent-smith:done\"\n",
		"platforms/github/github_test.go": "package github\nvar a = \"agent-smith:done\"\n",
		"trackersim/sim_test.go":          "package trackersim\nvar a = \"agent-smith:done\"\n",
	}, `housekeeping/a_test.go:2: "agent-smith:done"`, `lifecycle/runstate/r_test.go:2: "agent-smith:failed"`, `lifecycle/s_test.go:2: "agent-smith:done"`)
}
