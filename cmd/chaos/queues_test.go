package main

import (
	"go/ast"
	"slices"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/astguard"
)

// queueListBuilders are the pkg/keys builders that find the lists a
// PipelineRequest waits or runs in. keys.Queue alone is also the key whose
// cluster slot failover.go kills, so it is not one of them.
var queueListBuilders = []string{"QueueLevelPattern", "ProcessingPattern"}

// queueLocations lists the uses of queueListBuilders in the non-test Go
// files of dir outside requestLists: every part of the chaos run that looks
// for a request looks in the same places, so a new kind of queue list is
// added once.
func queueLocations(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	astguard.Walk(t, dir, astguard.Options{Shallow: true}, func(f *astguard.File) {
		for _, d := range f.AST.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "requestLists" {
				continue
			}
			ast.Inspect(d, func(n ast.Node) bool {
				if x, name, ok := astguard.Selector(n); ok && x == "keys" && slices.Contains(queueListBuilders, name) {
					out = append(out, f.At(n.Pos())+": keys."+name)
				}
				return true
			})
		}
	})
	return out
}

// The chaos run locates queued requests in one place, requestLists.
func TestChaosLocatesQueuesOnce(t *testing.T) {
	if v := queueLocations(t, "."); len(v) > 0 {
		t.Errorf("queue lists located outside requestLists; call requestLists or queuedRequests:\n%s", strings.Join(v, "\n"))
	}
}

// The check finds a builder outside requestLists and leaves the owner and
// tests alone.
func TestQueueLocationsFindsCopies(t *testing.T) {
	astguard.Finds(t, queueLocations, map[string]string{
		"bad.go":     "package main\nfunc requestLists() []string { return []string{keys.QueueLevelPattern()} }\nfunc other() string { return keys.ProcessingPattern() }\n",
		"ok_test.go": "package main\nvar q = keys.ProcessingPattern()\n",
	}, "bad.go:3: keys.ProcessingPattern")
}
