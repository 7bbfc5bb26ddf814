package runguard_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle/runguard"
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

// hidepidGuard makes l start its guard as a hardened daemon with run_as
// runs: in a /proc mounted hidepid=invisible (systemd
// ProtectProc=invisible), without CAP_SYS_PTRACE and outside group 0 (the
// mount's default gid= group, which sees every process), so the guard,
// uid 0, sees no /proc/<pid> of the pipeline's user. It skips the test
// where that cannot be set up or hides nothing.
func hidepidGuard(t *testing.T, l *runguard.Launcher) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting /proc and running the pipeline as nobody need root")
	}
	unshare, err1 := exec.LookPath("unshare")
	_, err2 := exec.LookPath("setpriv")
	if err1 != nil || err2 != nil {
		t.Skip("unshare or setpriv not installed")
	}
	const script = `mount -t proc -o hidepid=invisible proc /proc && exec setpriv --bounding-set -sys_ptrace --regid 1 --clear-groups "$@"`
	wrap := func(argv ...string) []string {
		return append([]string{"-m", "--propagation", "private", "/bin/sh", "-c", script, "sh"}, argv...)
	}
	nobody := exec.Command("sleep", "60")
	nobody.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := nobody.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = nobody.Process.Kill(); _ = nobody.Wait() }()
	out, err := exec.Command(unshare, wrap("cat", fmt.Sprintf("/proc/%d/stat", nobody.Process.Pid))...).CombinedOutput()
	if err == nil {
		t.Skipf("hidepid=invisible does not hide nobody's processes here: %s", out)
	}
	if !strings.Contains(string(out), "No such file") {
		t.Skipf("cannot mount /proc with hidepid=invisible: %v: %s", err, out)
	}
	l.Args = wrap(l.Exe, "guard")
	l.Exe = unshare
}

// Under hidepid with run_as (the shipped hardening), the guard still
// finds and kills the pipeline's escapees, which a /proc scan does not
// show it: it finds its children in its own /proc entry.
func TestGuardKillsEscapedProcessesItCannotSeeInProc(t *testing.T) {
	_, l := setup(t)
	hidepidGuard(t, l)
	e := procruntest.NewEscaping(t, "exit 0\n")
	e.Spec.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
	if err := os.Chmod(e.Spec.Dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(e.Spec.Dir), 0o755); err != nil {
		t.Fatal(err)
	}
	resc, out := run(t, l, e.Spec)
	if r := await(t, resc); !r.OK() {
		t.Fatalf("got %s: %s", r.Describe(), out.String())
	}
	e.Escaped(t)
	e.NoneLeft(t)
	if !strings.Contains(out.String(), "killed 2 process(es)") {
		t.Errorf("the guard does not say it killed both escapees:\n%s", out.String())
	}
}
