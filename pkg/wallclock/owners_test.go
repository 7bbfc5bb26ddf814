package wallclock

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

// readsWallclock lists the files (slash paths from the module root) whose
// time.Now measures only a local interval or deadline, never a wall time
// another replica or Redis sees; every other reading goes through Now, so
// the chaos run's skew reaches it.
var readsWallclock = map[string]string{
	"pkg/wallclock/wallclock.go":             "the owner",
	"cmd/agentsmithd/demo.go":                "a unique demo secret",
	"cmd/agentsmithctl/root.go":              "the operator's clock, not a replica's",
	"lifecycle/receiver/receiver.go":         "a socket read deadline",
	"lifecycle/runguard/guard.go":            "time since Redis last confirmed the run",
	"lifecycle/runguard/reap_linux.go":       "a reap deadline",
	"pkg/procrun/procrun.go":                 "a run's duration",
	"pkg/queue/queue.go":                     "a blocking pop's deadline",
	"pkg/runcg/runcg_linux.go":               "a cgroup sweep and removal deadline",
	"pkg/procrun/procruntest/procruntest.go": "a test helper's marker",
	// Default clocks when the caller passes none; the daemon passes none
	// to budget.New, so its quota expiry reads time.Now while the
	// transport's resets read Now (they differ only under a skew).
	"pkg/budget/budget.go":   "default clock of New",
	"platforms/jira/jira.go": "default Options.Clock",
}

// localTimers are the base names of lifecycle files, wherever the
// lifecycle tree keeps them, whose time.Now schedules local work.
var localTimers = map[string]string{"poller.go": "the poll schedule"}

// notDaemon are the trees that are not the daemon: test helpers, the
// tracker emulator and the harnesses, which measure their own time.
var notDaemon = []string{"bench", "cmd/chaos", "trackersim", "internal", "platforms/trackertest"}

// timeNowOutsideOwners lists every time.Now in the non-test Go files under
// root outside readsWallclock, localTimers and notDaemon.
func timeNowOutsideOwners(t *testing.T, root string) []string {
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
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || slices.Contains(notDaemon, rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || readsWallclock[rel] != "" {
			return nil
		}
		if strings.HasPrefix(rel, "lifecycle/") && localTimers[d.Name()] != "" {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		timeName := ""
		for _, imp := range f.Imports {
			if imp.Path.Value == `"time"` {
				timeName = "time"
				if imp.Name != nil {
					timeName = imp.Name.Name
				}
			}
		}
		if timeName == "" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Now" {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == timeName {
				out = append(out, rel+":"+strconv.Itoa(fset.Position(sel.Pos()).Line))
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

// The daemon reads the wall clock through Now: a time.Now elsewhere would
// escape the skew the chaos run gives a replica, and the clock a test
// injects (housekeeping's Clock defaults to Now).
func TestDaemonReadsTheWallClockThroughNow(t *testing.T) {
	if v := timeNowOutsideOwners(t, moduleRoot(t)); len(v) > 0 {
		t.Errorf("time.Now outside its allowed owners; use wallclock.Now or list the file with its reason:\n%s", strings.Join(v, "\n"))
	}
}

// The check finds time.Now called and passed as a value, under another
// import name too, and leaves tests, owners and harnesses alone.
func TestTimeNowCheckFindsReadings(t *testing.T) {
	root := t.TempDir()
	for rel, src := range map[string]string{
		"housekeeping/bad.go":        "package housekeeping\nimport \"time\"\nvar a = time.Now()\nvar b = time.Now\n",
		"lifecycle/ops/alias.go":     "package ops\nimport tm \"time\"\nvar a = tm.Now()\n",
		"lifecycle/x/poller.go":      "package x\nimport \"time\"\nvar a = time.Now()\n",
		"housekeeping/a_test.go":     "package housekeeping\nimport \"time\"\nvar a = time.Now()\n",
		"trackersim/sim.go":          "package trackersim\nimport \"time\"\nvar a = time.Now()\n",
		"pkg/wallclock/wallclock.go": "package wallclock\nimport \"time\"\nvar a = time.Now()\n",
	} {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := timeNowOutsideOwners(t, root)
	want := []string{"housekeeping/bad.go:3", "housekeeping/bad.go:4", "lifecycle/ops/alias.go:3"}
	if !slices.Equal(got, want) {
		t.Fatalf("readings\n%q\nwant\n%q", got, want)
	}
}
