package procrun_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/pkg/procrun/procruntest"
	"github.com/agentsmithd/agentsmithd/pkg/runcg"
)

func cgroups(t *testing.T) *runcg.Parent {
	t.Helper()
	p, err := runcg.Detect()
	if err != nil {
		t.Skipf("no run cgroups here: %v", err)
	}
	return p
}

// A pipeline that escapes its process group (setsid, double fork) and
// exits 0 leaves nothing behind: its run cgroup is killed when it ends.
func TestEscapedProcessesEndWithTheRun(t *testing.T) {
	e := procruntest.NewEscaping(t, "exit 0\n")
	e.Spec.Cgroups = cgroups(t)
	r := procrun.Run(context.Background(), e.Spec)
	if !r.OK() || r.Leftover != nil {
		t.Fatalf("got %s, leftover %v", r.Describe(), r.Leftover)
	}
	e.Escaped(t)
	e.NoneLeft(t)
}

// Likewise when the run is ended by its timeout, the whole group
// SIGKILLed at once.
func TestEscapedProcessesEndWithATimedOutRun(t *testing.T) {
	e := procruntest.NewEscaping(t, "exec sleep 1000\n")
	e.Spec.Cgroups = cgroups(t)
	e.Spec.Timeout, e.Spec.Grace = 2*time.Second, -1
	r := procrun.Run(context.Background(), e.Spec)
	if !r.TimedOut || r.Leftover != nil {
		t.Fatalf("got %s, leftover %v", r.Describe(), r.Leftover)
	}
	e.Escaped(t)
	e.NoneLeft(t)
}

// A run whose output pipe cannot be made (no fd left) leaves neither its
// run cgroup's directory nor the cgroup's fd behind.
func TestCgroupReleasedWhenThePipeFails(t *testing.T) {
	cg := cgroups(t)
	if r, w, err := os.Pipe(); err == nil { // the poller's own fds, once
		r.Close()
		w.Close()
	}
	before := runDirs(t, cg.Dir())
	lim := oneFreeFD(t)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	low := old
	low.Cur = uint64(lim)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	r := procrun.Run(context.Background(), procrun.Spec{Argv: []string{"/bin/true"}, Cgroups: cg})
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	if r.Err == nil || !strings.Contains(r.Err.Error(), "output pipe") {
		t.Fatalf("the run did not fail on its output pipe: %s", r.Describe())
	}
	for d := range runDirs(t, cg.Dir()) {
		if !before[d] {
			t.Errorf("run cgroup %s left behind", d)
		}
	}
	if got := oneFreeFD(t); got != lim {
		t.Errorf("an fd is left open: the first free fds moved from below %d to below %d", lim, got)
	}
}

// runDirs are the run cgroups in dir.
func runDirs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "run-") {
			out[e.Name()] = true
		}
	}
	return out
}

// oneFreeFD returns the fd limit below which exactly one fd is free: the
// lowest free one, which reading /proc/self/fd itself took.
func oneFreeFD(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	open := map[int]bool{}
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			open[n] = true
		}
	}
	free := 0
	for open[free] {
		free++
	}
	// free is the directory's own fd, closed since: the lowest free one.
	next := free + 1
	for open[next] {
		next++
	}
	return next
}
