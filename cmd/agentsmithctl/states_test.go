package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

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
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			v, err := strconv.Unquote(lit.Value)
			if err == nil && (slices.Contains(names, v) || strings.Contains(v, lifecycle.InProgress.String()+", ")) {
				out = append(out, filepath.Base(path)+":"+strconv.Itoa(fset.Position(lit.Pos()).Line)+": "+lit.Value)
			}
			return true
		})
	}
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
	dir := t.TempDir()
	for name, src := range map[string]string{
		"bad.go":     "package main\nvar a = []string{\"done\", \"x\"}\nvar b = \"one of enqueued, in-progress, done\"\n",
		"ok_test.go": "package main\nvar s = \"failed\"\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := stateCopies(t, dir)
	want := []string{`bad.go:2: "done"`, `bad.go:3: "one of enqueued, in-progress, done"`}
	if !slices.Equal(got, want) {
		t.Fatalf("copies\n%q\nwant\n%q", got, want)
	}
}
