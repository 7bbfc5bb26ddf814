package platforms_test

import (
	"go/ast"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/astguard"
	"github.com/agentsmithd/agentsmithd/platforms"
	_ "github.com/agentsmithd/agentsmithd/platforms/all"
)

const module = "github.com/agentsmithd/agentsmithd"

// guardSkips are the trees that may decide on a platform's name: the
// registry and the platform packages (platforms/), the emulator of the
// four trackers (trackersim/), and bench/, a module of its own that
// drives trackersim's per-platform mounts.
var guardSkips = []string{"platforms", "trackersim", "bench", "testdata"}

// A platform's facts live in its Descriptor. A switch on platform names
// anywhere else is a second place to update when a platform is added, the
// drift Descriptor exists to end: this test fails on a case that names a
// platform ("github", github.Platform, config.Platform*), in a switch on a
// value or as a comparison in a switch on conditions.
func TestNoSwitchOnPlatformNamesOutsideTheRegistry(t *testing.T) {
	names := platforms.Names()
	if len(names) == 0 {
		t.Fatal("no platform registered")
	}
	astguard.Walk(t, "..", astguard.Options{Files: astguard.All, Skip: guardSkips}, func(f *astguard.File) {
		for _, pos := range platformCases(f.AST, names) {
			t.Errorf("%s: a case on a platform name; ask platforms.Lookup for the platform's Descriptor instead", f.At(pos))
		}
	})
}

// platformCases are the positions of f's switch cases that name a
// platform.
func platformCases(f *ast.File, names []string) []token.Pos {
	// Local names of the imports whose Platform constant names a platform.
	platformPkgs := map[string]bool{}
	configPkg := ""
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		local := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			local = imp.Name.Name
		}
		switch {
		case p == module+"/config":
			configPkg = local
		case strings.HasPrefix(p, module+"/platforms/") && slices.Contains(names, p[len(module+"/platforms/"):]):
			platformPkgs[local] = true
		}
	}
	isPlatform := func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.BasicLit:
			s, err := strconv.Unquote(e.Value)
			return e.Kind == token.STRING && err == nil && slices.Contains(names, s)
		case *ast.SelectorExpr:
			x, ok := e.X.(*ast.Ident)
			return ok && (platformPkgs[x.Name] && e.Sel.Name == "Platform" ||
				x.Name == configPkg && strings.HasPrefix(e.Sel.Name, "Platform"))
		}
		return false
	}
	var out []token.Pos
	ast.Inspect(f, func(n ast.Node) bool {
		sw, ok := n.(*ast.SwitchStmt)
		if !ok {
			return true
		}
		for _, s := range sw.Body.List {
			for _, e := range s.(*ast.CaseClause).List {
				if sw.Tag != nil && isPlatform(e) || sw.Tag == nil && comparesPlatform(e, isPlatform) {
					out = append(out, e.Pos())
				}
			}
		}
		return true
	})
	return out
}

// comparesPlatform reports whether e holds a == or != with a platform
// name on one side.
func comparesPlatform(e ast.Expr, isPlatform func(ast.Expr) bool) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if b, ok := n.(*ast.BinaryExpr); ok && (b.Op == token.EQL || b.Op == token.NEQ) && (isPlatform(b.X) || isPlatform(b.Y)) {
			found = true
		}
		return !found
	})
	return found
}
