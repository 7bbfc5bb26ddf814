package lifecycletest_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

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
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || slices.Contains(rawLabelTrees, rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") || rawLabelFiles[rel] != "" {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if v, err := strconv.Unquote(lit.Value); err == nil && slices.Contains(labels, v) {
					out = append(out, rel+":"+strconv.Itoa(fset.Position(lit.Pos()).Line)+": "+lit.Value)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// moduleRoot is the directory holding the main module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/agentsmithd/agentsmithd\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("module root not found")
		}
		dir = parent
	}
}

// Tests name lifecycle labels through lifecycle (Label here, or a
// lifecycle.Labels), so a change of spelling changes them with the daemon.
func TestTestsNameLabelsThroughLifecycle(t *testing.T) {
	if v := labelLiterals(t, moduleRoot(t)); len(v) > 0 {
		t.Errorf("lifecycle labels spelled in tests; use lifecycletest.Label(lifecycle.Done) or list the file with its reason:\n%s", strings.Join(v, "\n"))
	}
}

// The check finds a label literal in a test, and leaves non-test files,
// the raw-label trees, lifecycle's top level and labels inside longer
// text alone; a lifecycle subpackage's tests are checked.
func TestLabelLiteralsFindsCopies(t *testing.T) {
	root := t.TempDir()
	for rel, src := range map[string]string{
		"housekeeping/a_test.go":          "package housekeeping\nvar a = []string{\"agent-smith\", \"agent-smith:done\"}\nvar b = `{\"labels\":[\"agent-smith:done\"]}`\n",
		"housekeeping/a.go":               "package housekeeping\nvar a = \"agent-smith:done\"\n",
		"lifecycle/runstate/r_test.go":    "package runstate\nvar a = \"agent-smith:failed\"\n",
		"lifecycle/s_test.go":             "package lifecycle\nvar a = \"agent-smith:done\"\n",
		"platforms/github/github_test.go": "package github\nvar a = \"agent-smith:done\"\n",
		"trackersim/sim_test.go":          "package trackersim\nvar a = \"agent-smith:done\"\n",
	} {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := labelLiterals(t, root)
	want := []string{`housekeeping/a_test.go:2: "agent-smith:done"`, `lifecycle/runstate/r_test.go:2: "agent-smith:failed"`, `lifecycle/s_test.go:2: "agent-smith:done"`}
	if !slices.Equal(got, want) {
		t.Fatalf("literals\n%q\nwant\n%q", got, want)
	}
}
