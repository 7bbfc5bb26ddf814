package runguard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/pkg/procrun/procruntest"
	"github.com/agentsmithd/agentsmithd/pkg/runcg"
)

// await returns the run's result, failing the test if it does not end.
func await(t *testing.T, resc <-chan procrun.Result) procrun.Result {
	t.Helper()
	select {
	case r := <-resc:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not end")
		return procrun.Result{}
	}
}

// Without a cgroup (the guard's subreaper alone): a pipeline that escapes
// its process group by setsid and by a double fork and exits 0 leaves
// nothing behind once its run has ended.
func TestGuardKillsEscapedProcesses(t *testing.T) {
	_, l := setup(t)
	e := procruntest.NewEscaping(t, "exit 0\n")
	resc, out := run(t, l, e.Spec)
	if r := await(t, resc); !r.OK() {
		t.Fatalf("got %s: %s", r.Describe(), out.String())
	}
	e.Escaped(t)
	e.NoneLeft(t)
	if !strings.Contains(out.String(), "left running") {
		t.Errorf("the guard does not say it killed what the pipeline left:\n%s", out.String())
	}
}

// Likewise for a pipeline ended by its timeout (SIGTERM to the group, which
// ends it; the escapees ignore nothing but are not in the group).
func TestGuardKillsEscapedProcessesOfATimedOutRun(t *testing.T) {
	_, l := setup(t)
	e := procruntest.NewEscaping(t, "exec sleep 1000\n")
	e.Spec.Timeout, e.Spec.Grace = 2*time.Second, 10*time.Second
	resc, out := run(t, l, e.Spec)
	if r := await(t, resc); !r.TimedOut {
		t.Fatalf("got %s: %s", r.Describe(), out.String())
	}
	e.Escaped(t)
	e.NoneLeft(t)
}

// Likewise when the guard kills the run itself (taken over while the
// daemon is frozen): nothing on the daemon's side acts.
func TestGuardKillsEscapedProcessesWhenRunTakenOver(t *testing.T) {
	rdb, l := setup(t)
	e := procruntest.NewEscaping(t, "exec sleep 1000\n")
	resc, out := run(t, l, e.Spec)
	e.AwaitEscaped(t)
	if ok, err := runstate.Evict(t.Context(), rdb, ref, "A"); err != nil || !ok {
		t.Fatalf("evict: %v %v", ok, err)
	}
	if r := await(t, resc); r.Signal != "killed" {
		t.Fatalf("got %s: %s", r.Describe(), out.String())
	}
	e.NoneLeft(t)
}

// With a run cgroup, even a guard SIGKILLed at once with its group (a
// timeout without grace) leaves nothing: the daemon kills the cgroup.
func TestCgroupKillsEscapedProcessesOfAKilledGuard(t *testing.T) {
	cg, err := runcg.Detect()
	if err != nil {
		t.Skipf("no run cgroups here: %v", err)
	}
	_, l := setup(t)
	e := procruntest.NewEscaping(t, "exec sleep 1000\n")
	e.Spec.Cgroups = cg
	e.Spec.Timeout, e.Spec.Grace = 2*time.Second, -1
	resc, out := runCtx(t, context.Background(), l, e.Spec)
	if r := await(t, resc); !r.TimedOut || r.Leftover != nil {
		t.Fatalf("got %s, leftover %v: %s", r.Describe(), r.Leftover, out.String())
	}
	e.Escaped(t)
	e.NoneLeft(t)
}
