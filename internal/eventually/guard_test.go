package eventually_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// handRolledAllowed lists the test loops that sleep or watch the clock for a
// reason other than waiting for a condition, keyed by file (from the module
// root) and enclosing function. Each value is the reason.
var handRolledAllowed = map[string]string{
	"lifecycle/audit/bench_test.go:BenchmarkWriteThrough": "a benchmark's backpressure and drain: " +
		"a 1 ms yield inside the timed region, where Poll's 10 ms would be counted in events/s",
	"cmd/agentsmithd/internal/daemon/statuspage_actions_test.go:waitText": "chromedp.Poll polls inside " +
		"the browser until the deadline; the loop only re-issues a poll cut off by the page navigating",
}

// TestNoHandRolledPolling keeps every test waiting through this package: a
// for loop in a _test.go file whose body calls time.Sleep, or whose
// condition reads the clock (for time.Now().Before(deadline)), is a polling
// loop written by hand, with its own interval, deadline and failure
// message. Loops inside function literals count for the literal's
// enclosing function; a sleep in a goroutine started by a loop does not
// make the loop a poll.
func TestNoHandRolledPolling(t *testing.T) {
	root := moduleRoot(t)
	found := map[string]bool{}
	var bad []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || hasGoMod(path)) {
				return filepath.SkipDir // fixtures, and other modules (bench, deploy/helm)
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			for _, pos := range pollingLoops(fn.Body) {
				key := rel + ":" + fn.Name.Name
				if _, ok := handRolledAllowed[key]; ok {
					found[key] = true
					continue
				}
				bad = append(bad, fmt.Sprintf("%s:%d in %s", rel, fset.Position(pos).Line, fn.Name.Name))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("%s: a hand-rolled polling loop; use eventually.Wait or eventually.Value "+
			"(or add it to handRolledAllowed with the reason it is not a wait)", b)
	}
	for key := range handRolledAllowed {
		if !found[key] {
			t.Errorf("handRolledAllowed lists %s, which has no such loop: remove the entry", key)
		}
	}
}

// pollingLoops returns the positions of the for loops in body that poll:
// a time.Sleep in the loop's own body (not in a function literal inside
// it), or a call to time.Now, time.Since or time.Until in its condition.
func pollingLoops(body *ast.BlockStmt) []token.Pos {
	var out []token.Pos
	ast.Inspect(body, func(n ast.Node) bool {
		var loopBody *ast.BlockStmt
		var cond ast.Expr
		switch l := n.(type) {
		case *ast.ForStmt:
			loopBody, cond = l.Body, l.Cond
		case *ast.RangeStmt:
			loopBody = l.Body
		default:
			return true
		}
		if (cond != nil && callsTime(cond, "Now", "Since", "Until")) || callsTime(loopBody, "Sleep") {
			out = append(out, n.Pos())
		}
		return true
	})
	return out
}

// callsTime reports whether n calls one of the time package's funcs,
// outside any function literal in n.
func callsTime(n ast.Node, funcs ...string) bool {
	hit := false
	ast.Inspect(n, func(n ast.Node) bool {
		switch e := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			if sel, ok := e.Fun.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "time" && slices.Contains(funcs, sel.Sel.Name) {
					hit = true
				}
			}
		}
		return !hit
	})
	return hit
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for !hasGoMod(dir) {
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
	return dir
}

func hasGoMod(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}

// The guard must see the shapes it exists for, or it passes by seeing
// nothing.
func TestPollingLoopsFindsTheHandRolledShapes(t *testing.T) {
	cases := map[string]int{
		`for time.Now().Before(deadline) { check() }`:                    1,
		`for { if ok() { break }; time.Sleep(10 * time.Millisecond) }`:   1,
		`for i := 0; i < 50; i++ { if ok() { break }; time.Sleep(p) }`:   1,
		`for range 50 { time.Sleep(p) }`:                                 1,
		`for time.Since(start) < d { select { case <-time.After(p): } }`: 1,
		`for _, x := range xs { go func() { time.Sleep(p); use(x) }() }`: 0,
		`for i := range n { use(i) }; time.Sleep(faultDuration)`:         0,
		`for { select { case <-tick.C: f(); case <-quit: return } }`:     0,
	}
	for src, want := range cases {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package x\nfunc f() {\n"+src+"\n}", 0)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if got := len(pollingLoops(f.Decls[0].(*ast.FuncDecl).Body)); got != want {
			t.Errorf("%s: %d polling loops found, want %d", src, got, want)
		}
	}
}
