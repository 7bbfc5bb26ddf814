package keys

import (
	"go/ast"
	"slices"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/astguard"
)

// otherUses are files where "housekeeping" or "poller" names something
// other than a leader role.
var otherUses = map[string]string{"bench/main.go": "a benchmark's name"}

// leaderRoleCopies lists the string literals under root, outside this
// package and test files, that spell a leader role. Struct tags (config
// sections) and logger names (x.Named("poller")) name other things.
func leaderRoleCopies(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	astguard.Walk(t, root, astguard.Options{Skip: []string{"pkg/keys"}}, func(f *astguard.File) {
		if otherUses[f.Rel] != "" {
			return
		}
		ast.Inspect(f.AST, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				n.Tag = nil
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Named" {
					return false
				}
			case *ast.BasicLit:
				if v, ok := astguard.StringLit(n); ok && slices.Contains(LeaderRoles, v) {
					out = append(out, f.At(n.Pos())+": "+n.Value)
				}
			}
			return true
		})
	})
	return out
}

// The leader roles are spelled once, here: the daemon's leases, the
// config's role names, the fleet snapshot and the chaos run refer to
// LeaderPoller and LeaderHousekeeping, so a lease is read under the name
// it is taken.
func TestLeaderRolesAreSpelledOnce(t *testing.T) {
	if v := leaderRoleCopies(t, astguard.ModuleRoot(t)); len(v) > 0 {
		t.Errorf("leader roles spelled outside pkg/keys; use keys.LeaderPoller, keys.LeaderHousekeeping:\n%s", strings.Join(v, "\n"))
	}
}

// The check finds a role in a call and a list, and leaves struct tags,
// logger names and tests alone.
func TestLeaderRoleCopiesFindsCopies(t *testing.T) {
	astguard.Finds(t, leaderRoleCopies, map[string]string{
		"cmd/d/roles.go": "package d\nvar a = Leader(\"poller\")\nvar b = []string{\"x\", \"housekeeping\"}\n" +
			"type C struct{ H int `yaml:\"housekeeping\"` }\nvar l = log.Named(\"poller\")\n",
		"cmd/d/roles_test.go": "package d\nvar a = \"poller\"\n",
	}, `cmd/d/roles.go:2: "poller"`, `cmd/d/roles.go:3: "housekeeping"`)
}
