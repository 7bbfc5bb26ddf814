package keys

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

// otherUses are files where "housekeeping" or "poller" names something
// other than a leader role.
var otherUses = map[string]string{"bench/main.go": "a benchmark's name"}

// leaderRoleCopies lists the string literals under root, outside this
// package and test files, that spell a leader role. Struct tags (config
// sections) and logger names (x.Named("poller")) name other things.
func leaderRoleCopies(t *testing.T, root string) []string {
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
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || rel == "pkg/keys") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || otherUses[rel] != "" {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				n.Tag = nil
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Named" {
					return false
				}
			case *ast.BasicLit:
				if v, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING && slices.Contains(LeaderRoles, v) {
					out = append(out, rel+":"+strconv.Itoa(fset.Position(n.Pos()).Line)+": "+n.Value)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// moduleRoot is the directory holding the main module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/agentsmithd/agentsmithd\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("module root not found")
		}
		dir = parent
	}
}

// The leader roles are spelled once, here: the daemon's leases, the
// config's role names, the fleet snapshot and the chaos run refer to
// LeaderPoller and LeaderHousekeeping, so a lease is read under the name
// it is taken.
func TestLeaderRolesAreSpelledOnce(t *testing.T) {
	if v := leaderRoleCopies(t, moduleRoot(t)); len(v) > 0 {
		t.Errorf("leader roles spelled outside pkg/keys; use keys.LeaderPoller, keys.LeaderHousekeeping:\n%s", strings.Join(v, "\n"))
	}
}

// The check finds a role in a call and a list, and leaves struct tags,
// logger names and tests alone.
func TestLeaderRoleCopiesFindsCopies(t *testing.T) {
	root := t.TempDir()
	for rel, src := range map[string]string{
		"cmd/d/roles.go": "package d\nvar a = Leader(\"poller\")\nvar b = []string{\"x\", \"housekeeping\"}\n" +
			"type C struct{ H int `yaml:\"housekeeping\"` }\nvar l = log.Named(\"poller\")\n",
		"cmd/d/roles_test.go": "package d\nvar a = \"poller\"\n",
	} {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := leaderRoleCopies(t, root)
	want := []string{`cmd/d/roles.go:2: "poller"`, `cmd/d/roles.go:3: "housekeeping"`}
	if !slices.Equal(got, want) {
		t.Fatalf("copies\n%q\nwant\n%q", got, want)
	}
}
