package lifecycle_test

import (
	"go/ast"
	"path/filepath"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/astguard"
	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// A stage's pool, else the project's; the default pool encodes as "".
func TestPoolFor(t *testing.T) {
	p := &lifecycle.Project{Pool: "arm", Stages: []lifecycle.Stage{{Name: "plan"}, {Name: "implement", Pool: "gpu"},
		{Name: "test", Pool: lifecycle.DefaultPool}}}
	for stage, want := range map[string]string{"": "arm", "plan": "arm", "implement": "gpu", "test": "", "nope": "arm"} {
		if got := p.PoolFor(stage); got != want {
			t.Errorf("PoolFor(%q) = %q, want %q", stage, got, want)
		}
	}
	if got := (&lifecycle.Project{Pool: lifecycle.DefaultPool}).PoolFor(""); got != "" {
		t.Errorf("default pool's PoolFor = %q, want \"\"", got)
	}
}

// Every request the daemon writes takes its Pool from PoolFor(its stage):
// a PipelineRequest literal that sets Stage or Pool sets Pool to a
// PoolFor call, so no writer routes a stage by the project's pool alone
// or copies a pool the config has since changed.
func TestRequestPoolsComeFromPoolFor(t *testing.T) {
	root := astguard.ModuleRoot(t)
	var found []string
	for _, dir := range []string{"lifecycle", "housekeeping", "internal", "cmd"} {
		found = append(found, requestPoolWriters(t, filepath.Join(root, dir))...)
	}
	for _, f := range found {
		t.Errorf("request pool not from PoolFor: %s", f)
	}
}

// The check finds a literal copying a pool and one setting a stage alone.
func TestRequestPoolCheckFindsViolations(t *testing.T) {
	astguard.Finds(t, requestPoolWriters, map[string]string{"x.go": `package x

func f(p *lifecycle.Project, req lifecycle.PipelineRequest) []lifecycle.PipelineRequest {
	return []lifecycle.PipelineRequest{
		{Stage: "a", Pool: req.Pool},
		lifecycle.PipelineRequest{Stage: "b"},
		{Stage: "c", Pool: p.PoolFor("c")},
	}
}
`}, "x.go:5: Pool: req.Pool", "x.go:6: Stage without Pool")
}

func requestPoolWriters(t *testing.T, root string) []string {
	var out []string
	astguard.Walk(t, root, astguard.Options{}, func(f *astguard.File) {
		ast.Inspect(f.AST, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if !isRequestType(lit.Type) {
				// Elements of a []PipelineRequest literal leave their type out.
				if arr, ok := lit.Type.(*ast.ArrayType); ok && isRequestType(arr.Elt) {
					for _, el := range lit.Elts {
						if c, ok := el.(*ast.CompositeLit); ok && c.Type == nil {
							out = append(out, checkRequestLit(f, c)...)
						}
					}
				}
				return true
			}
			out = append(out, checkRequestLit(f, lit)...)
			return true
		})
	})
	return out
}

func isRequestType(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == "PipelineRequest"
	case *ast.SelectorExpr:
		return e.Sel.Name == "PipelineRequest"
	}
	return false
}

func checkRequestLit(f *astguard.File, lit *ast.CompositeLit) []string {
	var stage bool
	var pool *ast.KeyValueExpr
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		switch k, _ := kv.Key.(*ast.Ident); {
		case k == nil:
		case k.Name == "Stage":
			stage = true
		case k.Name == "Pool":
			pool = kv
		}
	}
	switch {
	case pool != nil:
		if call, ok := pool.Value.(*ast.CallExpr); ok {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "PoolFor" {
				return nil
			}
		}
		return []string{f.At(pool.Pos()) + ": " + f.Text(pool)}
	case stage:
		return []string{f.At(lit.Pos()) + ": Stage without Pool"}
	}
	return nil
}
