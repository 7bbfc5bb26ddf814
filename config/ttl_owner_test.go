package config

import (
	"go/ast"
	"go/token"
	"slices"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/astguard"
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
	opts := astguard.Options{Skip: []string{"cmd/chaos"}, SkipNames: []string{"bench", "trackersim"}}
	astguard.Walk(t, root, opts, func(f *astguard.File) {
		if slices.Contains(ttlOwners, f.Rel) {
			return
		}
		for _, decl := range f.AST.Decls {
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
					out = append(out, f.At(name.Pos())+": "+name.Name)
				}
			}
		}
	})
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
	astguard.Finds(t, ttlDefinitions, map[string]string{
		"config/config.go": "package config\nconst (\n\tDefaultHeartbeatTTL = 2 * time.Minute\n\tDefaultLeaseTTL = lease.DefaultTTL\n)\nvar cacheTTL = time.Hour\n",
		"pkg/keys/keys.go": "package keys\nconst HeartbeatTTL = 2 * time.Minute\n",
		"config/a_test.go": "package config\nconst ttl = time.Second\n",
	}, "config/config.go:3: DefaultHeartbeatTTL", "config/config.go:6: cacheTTL")
}
