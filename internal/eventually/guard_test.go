package eventually_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/astguard"
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
	found := map[string]bool{}
	var bad []string
	// SkipModules: other modules (bench, deploy/helm) keep their own rules.
	opts := astguard.Options{Files: astguard.Tests, SkipModules: true}
	astguard.Walk(t, astguard.ModuleRoot(t), opts, func(f *astguard.File) {
		for _, decl := range f.AST.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			for _, pos := range pollingLoops(fn.Body) {
				key := f.Rel + ":" + fn.Name.Name
				if _, ok := handRolledAllowed[key]; ok {
					found[key] = true
					continue
				}
				bad = append(bad, f.At(pos)+" in "+fn.Name.Name)
			}
		}
	})
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
			if pkg, name, ok := astguard.Selector(e.Fun); ok && pkg == "time" && slices.Contains(funcs, name) {
				hit = true
			}
		}
		return !hit
	})
	return hit
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
