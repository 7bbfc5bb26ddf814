package wallclock

import (
	"go/ast"
	"path"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/astguard"
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
	"pkg/runcg/group_linux.go":               "a cgroup kill and removal deadline",
	"pkg/runcg/parent_linux.go":              "a sweep's age of empty cgroups, on this host",
	"pkg/runcg/v1_linux.go":                  "a v1 kill and freeze deadline",
	"pkg/runcg/v2_linux.go":                  "the move to the daemon's leaf cgroup, a deadline",
	"pkg/egress/ca.go":                       "a run's CA validity, checked by its sandbox on this host",
	"pkg/egress/proxy.go":                    "socket deadlines and idle timers",
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
	astguard.Walk(t, root, astguard.Options{Skip: notDaemon}, func(f *astguard.File) {
		if readsWallclock[f.Rel] != "" || strings.HasPrefix(f.Rel, "lifecycle/") && localTimers[path.Base(f.Rel)] != "" {
			return
		}
		timeName, ok := f.Imports()["time"]
		if !ok {
			return
		}
		ast.Inspect(f.AST, func(n ast.Node) bool {
			if x, name, ok := astguard.Selector(n); ok && x == timeName && name == "Now" {
				out = append(out, f.At(n.Pos()))
			}
			return true
		})
	})
	return out
}

// The daemon reads the wall clock through Now: a time.Now elsewhere would
// escape the skew the chaos run gives a replica, and the clock a test
// injects (housekeeping's Clock defaults to Now).
func TestDaemonReadsTheWallClockThroughNow(t *testing.T) {
	if v := timeNowOutsideOwners(t, astguard.ModuleRoot(t)); len(v) > 0 {
		t.Errorf("time.Now outside its allowed owners; use wallclock.Now or list the file with its reason:\n%s", strings.Join(v, "\n"))
	}
}

// The check finds time.Now called and passed as a value, under another
// import name too, and leaves tests, owners and harnesses alone.
func TestTimeNowCheckFindsReadings(t *testing.T) {
	astguard.Finds(t, timeNowOutsideOwners, map[string]string{
		"housekeeping/bad.go":        "package housekeeping\nimport \"time\"\nvar a = time.Now()\nvar b = time.Now\n",
		"lifecycle/ops/alias.go":     "package ops\nimport tm \"time\"\nvar a = tm.Now()\n",
		"lifecycle/x/poller.go":      "package x\nimport \"time\"\nvar a = time.Now()\n",
		"housekeeping/a_test.go":     "package housekeeping\nimport \"time\"\nvar a = time.Now()\n",
		"trackersim/sim.go":          "package trackersim\nimport \"time\"\nvar a = time.Now()\n",
		"pkg/wallclock/wallclock.go": "package wallclock\nimport \"time\"\nvar a = time.Now()\n",
	}, "housekeeping/bad.go:3", "housekeeping/bad.go:4", "lifecycle/ops/alias.go:3")
}
