package runstate_test

import (
	"go/ast"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/astguard"
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
	astguard.Walk(t, root, astguard.Options{SkipNames: []string{"node_modules", "vendor"}}, func(f *astguard.File) {
		dir := path.Dir(f.Rel)
		keysName, redisName := "", ""
		for _, imp := range f.AST.Imports {
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
		ast.Inspect(f.AST, func(n ast.Node) bool {
			x, name, ok := astguard.Selector(n)
			if !ok {
				return true
			}
			switch {
			case x == keysName && keysName != "" && slices.Contains(runStateKeys, name) &&
				dir != "lifecycle/runstate" && dir != "pkg/keys":
				out = append(out, f.At(n.Pos())+": keys."+name+" outside lifecycle/runstate")
			case x == redisName && redisName != "" && name == "NewScript" && !slices.Contains(scriptOwners, dir):
				out = append(out, f.At(n.Pos())+": a Lua script outside "+strings.Join(scriptOwners, ", "))
			}
			return true
		})
	})
	return out
}

// or is a, or b when a is empty.
func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Nothing but this package reads or writes the run-state keys, and Lua
// scripts live only with the keys they touch: the run's rules have one
// owner. The walk covers the whole tree, the bench module too.
func TestRunStateKeysHaveOneOwner(t *testing.T) {
	if v := ownershipViolations(t, astguard.ModuleRoot(t)); len(v) > 0 {
		t.Errorf("run-state keys or Lua scripts used outside their owner:\n%s", strings.Join(v, "\n"))
	}
}

// The check catches a builder called under another import name and a
// script defined elsewhere, and leaves tests and the owner alone.
func TestOwnershipCheckFindsViolations(t *testing.T) {
	astguard.Finds(t, ownershipViolations, map[string]string{
		"housekeeping/bad.go": `package housekeeping
import k "github.com/agentsmithd/agentsmithd/pkg/keys"
var _ = k.Heartbeat("x")
var _ = k.Queue()
`,
		"lifecycle/ops/script.go": `package ops
import "github.com/redis/go-redis/v9"
var s = redis.NewScript("return 1")
`,
		"lifecycle/runstate/ok.go": `package runstate
import "github.com/agentsmithd/agentsmithd/pkg/keys"
import "github.com/redis/go-redis/v9"
var _ = keys.Inflight()
var s = redis.NewScript("return 1")
`,
		"lifecycle/seed_test.go": `package lifecycle
import "github.com/agentsmithd/agentsmithd/pkg/keys"
var _ = keys.Attempts()
`,
	},
		"housekeeping/bad.go:3: keys.Heartbeat outside lifecycle/runstate",
		"lifecycle/ops/script.go:3: a Lua script outside lifecycle/runstate, pkg/redislock, pkg/queue, pkg/budget",
	)
}
