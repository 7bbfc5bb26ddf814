package config

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
)

// ttlOwners are the files that define a TTL constant by its value: each
// TTL default lives in the package that writes the key it times out.
var ttlOwners = []string{
	"pkg/keys/keys.go",               // the specification's TTLs of the agentsmith: keys
	"pkg/lease/lease.go",             // the leader lease
	"pkg/presence/presence.go",       // a replica's liveness key
	"internal/statuspage/session.go", // the status page's login session
	"internal/statuspage/charts.go",  // the status page's chart cache
	"pkg/budget/budget.go",           // the bound on a rate-limit quota's key
}

// ttlDefinitions lists the constants and variables named *TTL (any case)
// in the non-test Go files under root whose value names no other
// constant: a TTL spelled by its value outside ttlOwners is a second
// default that can drift from the first.
func ttlDefinitions(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "bench" || rel == "cmd/chaos" || n == "trackersim") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || slices.Contains(ttlOwners, rel) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || (g.Tok != token.CONST && g.Tok != token.VAR) {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasSuffix(strings.ToUpper(name.Name), "TTL") || i >= len(vs.Values) || namesAConstant(vs.Values[i]) {
						continue
					}
					out = append(out, rel+":"+strconv.Itoa(fset.Position(name.Pos()).Line)+": "+name.Name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// namesAConstant reports whether e refers to a constant other than
// time's units (keys.HeartbeatTTL, lease.DefaultTTL).
func namesAConstant(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name != "time" {
				found = true
			}
			return false
		case *ast.Ident:
			found = true
		}
		return true
	})
	return found
}

// Each TTL default is defined once, by its owner; the config's defaults
// and every other service refer to it.
func TestTTLDefaultsHaveOneOwner(t *testing.T) {
	if v := ttlDefinitions(t, ".."); len(v) > 0 {
		t.Errorf("TTLs defined by value outside their owners (%s); refer to the owner's constant:\n%s",
			strings.Join(ttlOwners, ", "), strings.Join(v, "\n"))
	}
}

// The check finds a TTL spelled by its value, in a const block and a var,
// and leaves references, owners and tests alone.
func TestTTLDefinitionsFindsCopies(t *testing.T) {
	root := t.TempDir()
	for rel, src := range map[string]string{
		"config/config.go": "package config\nconst (\n\tDefaultHeartbeatTTL = 2 * time.Minute\n\tDefaultLeaseTTL = lease.DefaultTTL\n)\nvar cacheTTL = time.Hour\n",
		"pkg/keys/keys.go": "package keys\nconst HeartbeatTTL = 2 * time.Minute\n",
		"config/a_test.go": "package config\nconst ttl = time.Second\n",
	} {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := ttlDefinitions(t, root)
	want := []string{"config/config.go:3: DefaultHeartbeatTTL", "config/config.go:6: cacheTTL"}
	if !slices.Equal(got, want) {
		t.Fatalf("definitions\n%q\nwant\n%q", got, want)
	}
}
