package main

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
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			v, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			if v == lifecycle.DefaultLabelPrefix || strings.HasPrefix(v, lifecycle.DefaultLabelPrefix+":") || slices.Contains(names, v) {
				rel, _ := filepath.Rel(root, path)
				out = append(out, filepath.ToSlash(rel)+":"+strconv.Itoa(fset.Position(lit.Pos()).Line)+": "+lit.Value)
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
	root := t.TempDir()
	for name, src := range map[string]string{
		"bad.go":     "package main\nvar order = []string{\"pending\", \"done\"}\nvar l = \"agent-smith:\" + order[0]\nvar p = \"agent-smith\"\nvar ok = \"pendingx\"\n",
		"ok_test.go": "package main\nvar s = \"agent-smith:done\"\n",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := labelCopies(t, root)
	want := []string{`bad.go:2: "pending"`, `bad.go:2: "done"`, `bad.go:3: "agent-smith:"`, `bad.go:4: "agent-smith"`}
	if !slices.Equal(got, want) {
		t.Fatalf("copies\n%q\nwant\n%q", got, want)
	}
}
