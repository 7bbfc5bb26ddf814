package platforms_test

import (
	"go/ast"
	"go/parser"
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
// value or as a comparison in a switch on conditions, and, outside tests,
// on any == or != with a platform name on one side (p.Platform == "jira").
// Tests may compare: they check what a platform was given.
func TestNoSwitchOnPlatformNamesOutsideTheRegistry(t *testing.T) {
	names := platforms.Names()
	if len(names) == 0 {
		t.Fatal("no platform registered")
	}
	astguard.Walk(t, "..", astguard.Options{Files: astguard.All, Skip: guardSkips}, func(f *astguard.File) {
		comparisons := !strings.HasSuffix(f.Rel, "_test.go")
		for _, pos := range platformCases(f.AST, names, comparisons) {
			t.Errorf("%s: a case on or a comparison with a platform name; ask platforms.Lookup for the platform's Descriptor instead", f.At(pos))
		}
	})
}

// The check finds a case and a comparison on a platform name, by literal,
// by a platform package's Platform and by config's constant, and leaves
// comparisons alone where comparisons is false (tests).
func TestPlatformCasesFindsChoices(t *testing.T) {
	src := `package x

import (
	gh "github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/config"
)

func f(p string) int {
	switch p {
	case "jira":
		return 1
	case gh.Platform:
		return 2
	}
	switch {
	case p == config.PlatformGitLab:
		return 3
	}
	if p != "azuredevops" || "jira" == p {
		return 4
	}
	if p == "jiraX" || p == other {
		return 5
	}
	return 0
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"azuredevops", "github", "gitlab", "jira"}
	line := func(ps []token.Pos) []int {
		var out []int
		for _, p := range ps {
			out = append(out, fset.Position(p).Line)
		}
		return out
	}
	if got, want := line(platformCases(f, names, true)), []int{10, 12, 16, 19, 19}; !slices.Equal(got, want) {
		t.Errorf("with comparisons: lines %v, want %v", got, want)
	}
	if got, want := line(platformCases(f, names, false)), []int{10, 12, 16}; !slices.Equal(got, want) {
		t.Errorf("without comparisons: lines %v, want %v", got, want)
	}
}

// platformCases are the positions of f's switch cases that name a
// platform and, with comparisons, of its == and != with a platform name
// on one side.
func platformCases(f *ast.File, names []string, comparisons bool) []token.Pos {
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
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if comparisons && (n.Op == token.EQL || n.Op == token.NEQ) && (isPlatform(n.X) || isPlatform(n.Y)) {
				out = append(out, n.Pos())
			}
		case *ast.SwitchStmt:
			for _, s := range n.Body.List {
				for _, e := range s.(*ast.CaseClause).List {
					// With comparisons the BinaryExpr case finds those in a
					// switch on conditions.
					if n.Tag != nil && isPlatform(e) || n.Tag == nil && !comparisons && comparesPlatform(e, isPlatform) {
						out = append(out, e.Pos())
					}
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
