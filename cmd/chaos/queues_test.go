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
)

// queueListBuilders are the pkg/keys builders that find the lists a
// PipelineRequest waits or runs in. keys.Queue alone is also the key whose
// cluster slot failover.go kills, so it is not one of them.
var queueListBuilders = []string{"QueueLevelPattern", "ProcessingPattern"}

// queueLocations lists the uses of queueListBuilders in the non-test Go
// files of dir outside requestLists: every part of the chaos run that looks
// for a request looks in the same places, so a new kind of queue list is
// added once.
func queueLocations(t *testing.T, dir string) []string {
	t.Helper()
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
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "requestLists" {
				continue
			}
			ast.Inspect(d, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "keys" && slices.Contains(queueListBuilders, sel.Sel.Name) {
					out = append(out, filepath.Base(path)+":"+strconv.Itoa(fset.Position(sel.Pos()).Line)+": keys."+sel.Sel.Name)
				}
				return true
			})
		}
	}
	return out
}

// The chaos run locates queued requests in one place, requestLists.
func TestChaosLocatesQueuesOnce(t *testing.T) {
	if v := queueLocations(t, "."); len(v) > 0 {
		t.Errorf("queue lists located outside requestLists; call requestLists or queuedRequests:\n%s", strings.Join(v, "\n"))
	}
}

// The check finds a builder outside requestLists and leaves the owner and
// tests alone.
func TestQueueLocationsFindsCopies(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"bad.go":     "package main\nfunc requestLists() []string { return []string{keys.QueueLevelPattern()} }\nfunc other() string { return keys.ProcessingPattern() }\n",
		"ok_test.go": "package main\nvar q = keys.ProcessingPattern()\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := queueLocations(t, dir)
	want := []string{"bad.go:3: keys.ProcessingPattern"}
	if !slices.Equal(got, want) {
		t.Fatalf("locations\n%q\nwant\n%q", got, want)
	}
}
