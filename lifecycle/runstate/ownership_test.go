package runstate_test

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

// runStateKeys are the pkg/keys builders of the keys this package owns.
var runStateKeys = []string{"Heartbeat", "Inflight", "Attempts", "Finished", "Cancel", "ProjectSlots", "TokenSlots", "RunLogs", "Outcomes"}

// scriptOwners are the only packages that may define Lua scripts: each
// next to the keys its scripts touch, so a reader finds every rule about a
// key in one place.
var scriptOwners = []string{"lifecycle/runstate", "pkg/redislock", "pkg/queue", "pkg/budget"}

const keysPath = "github.com/agentsmithd/agentsmithd/pkg/keys"

// ownershipViolations lists every non-test Go file under root that calls a
// run-state key builder outside lifecycle/runstate (and pkg/keys, which
// defines them), or defines a Lua script (redis.NewScript) outside
// scriptOwners. Tests may name the keys: they check the stored layout
// from outside.
func ownershipViolations(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		dir := filepath.ToSlash(filepath.Dir(rel))
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		keysName, redisName := "", ""
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			name := ""
			if imp.Name != nil {
				name = imp.Name.Name
			}
			switch {
			case p == keysPath:
				keysName = or(name, "keys")
			case strings.HasPrefix(p, "github.com/redis/go-redis/"):
				redisName = or(name, "redis")
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			at := filepath.ToSlash(rel) + ":" + strconv.Itoa(fset.Position(sel.Pos()).Line)
			switch {
			case x.Name == keysName && keysName != "" && slices.Contains(runStateKeys, sel.Sel.Name) &&
				dir != "lifecycle/runstate" && dir != "pkg/keys":
				out = append(out, at+": keys."+sel.Sel.Name+" outside lifecycle/runstate")
			case x.Name == redisName && redisName != "" && sel.Sel.Name == "NewScript" && !slices.Contains(scriptOwners, dir):
				out = append(out, at+": a Lua script outside "+strings.Join(scriptOwners, ", "))
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

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// moduleRoot is the directory holding the main module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && filepath.Base(dir) != "bench" {
			if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/agentsmithd/agentsmithd\n") {
				return dir
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("module root not found")
		}
		dir = parent
	}
}

// Nothing but this package reads or writes the run-state keys, and Lua
// scripts live only with the keys they touch: the run's rules have one
// owner. The walk covers the whole tree, the bench module too.
func TestRunStateKeysHaveOneOwner(t *testing.T) {
	if v := ownershipViolations(t, moduleRoot(t)); len(v) > 0 {
		t.Errorf("run-state keys or Lua scripts used outside their owner:\n%s", strings.Join(v, "\n"))
	}
}

// The check catches a builder called under another import name and a
// script defined elsewhere, and leaves tests and the owner alone.
func TestOwnershipCheckFindsViolations(t *testing.T) {
	root := t.TempDir()
	write := func(rel, src string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("housekeeping/bad.go", `package housekeeping
import k "github.com/agentsmithd/agentsmithd/pkg/keys"
var _ = k.Heartbeat("x")
var _ = k.Queue()
`)
	write("lifecycle/ops/script.go", `package ops
import "github.com/redis/go-redis/v9"
var s = redis.NewScript("return 1")
`)
	write("lifecycle/runstate/ok.go", `package runstate
import "github.com/agentsmithd/agentsmithd/pkg/keys"
import "github.com/redis/go-redis/v9"
var _ = keys.Inflight()
var s = redis.NewScript("return 1")
`)
	write("lifecycle/seed_test.go", `package lifecycle
import "github.com/agentsmithd/agentsmithd/pkg/keys"
var _ = keys.Attempts()
`)
	got := ownershipViolations(t, root)
	want := []string{
		"housekeeping/bad.go:3: keys.Heartbeat outside lifecycle/runstate",
		"lifecycle/ops/script.go:3: a Lua script outside lifecycle/runstate, pkg/redislock, pkg/queue, pkg/budget",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("violations\n%q\nwant\n%q", got, want)
	}
}
