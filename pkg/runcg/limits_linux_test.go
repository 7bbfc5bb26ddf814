package runcg

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
)

// helperEnv makes the test binary a helper process (TestMain) instead of
// running tests: "hog" allocates and touches hogBytes, "spin" burns CPU.
// Both first wait for a line on stdin, so that the test can put them in
// the group's cgroups v1 before they do anything.
const helperEnv = "RUNCG_TEST_HELPER"

const hogBytes = 256 << 20

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "hog":
		waitGo()
		b := make([]byte, hogBytes)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		fmt.Println("survived", len(b))
		os.Exit(0)
	case "spin":
		waitGo()
		for n := 0; ; n++ {
			_ = n * n
		}
	case "killown":
		// A run guard in run cgroups v1 only, with a child, ending its run.
		waitGo()
		child := exec.Command("sleep", "1000")
		if err := child.Start(); err != nil {
			os.Exit(4)
		}
		fmt.Fprintln(os.Stderr, KillOwn())
		os.Exit(5)
	}
	os.Exit(2)
}

func waitGo() {
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		os.Exit(3)
	}
}

// limitParent is a Parent with the controllers ctrls, or skips the test
// naming the one missing.
func limitParent(t *testing.T, ctrls ...string) *Parent {
	t.Helper()
	p, err := DetectLimits()
	if err != nil {
		t.Skipf("no run cgroups here: %v", err)
	}
	for _, c := range ctrls {
		if _, _, ok := p.ctrl(c); !ok {
			_, _, _, where := p.Controllers()
			t.Skipf("no %s controller, on cgroup v2 or v1: %s", c, where)
		}
	}
	return p
}

// newGroup makes a group with l that the test's cleanup closes.
func newGroup(t *testing.T, p *Parent, l Limits) *Group {
	t.Helper()
	g, err := p.NewLimited(l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// proc is a started helper process and its exit.
type proc struct {
	cmd    *exec.Cmd
	goW    *os.File
	exited chan error
}

// start starts cmd in g, as a run's first process is: in its cgroup v2
// from the start (unless v1only), joined to its cgroups v1 before it is
// told to go on.
func start(t *testing.T, g *Group, cmd *exec.Cmd, v1only bool) *proc {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = r
	if !v1only && g.FD() >= 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD()}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	p := &proc{cmd: cmd, goW: w, exited: make(chan error, 1)}
	// Reaped at once, so that no zombie of it waits on the test.
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		w.Close()
	})
	if err := g.Join(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	return p
}

// helper starts the test binary as helper mode in g.
func helper(t *testing.T, g *Group, mode string) *proc {
	t.Helper()
	return start(t, g, helperCmd(mode), false)
}

func helperCmd(mode string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.Stderr = os.Stderr
	return cmd
}

// wait waits for p to exit, failing the test after a minute.
func (p *proc) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-p.exited:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s still runs after a minute", p.cmd.Path)
		return nil
	}
}

// killedBy reports whether err is an exit by signal sig.
func killedBy(err error, sig syscall.Signal) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// A process allocating and touching 256 MiB under a 64 MiB limit is
// OOM-killed, and LimitHit says so in the config's units; without the
// limit (the control) it allocates it all and exits 0.
func TestMemoryLimitKillsAHog(t *testing.T) {
	p := limitParent(t, "memory")
	t.Run("limited", func(t *testing.T) {
		g := newGroup(t, p, Limits{MemoryBytes: 64 << 20})
		err := helper(t, g, "hog").wait(t)
		if !killedBy(err, syscall.SIGKILL) {
			t.Fatalf("the hog under 64 MiB ended with %v, want SIGKILL", err)
		}
		if got, want := g.LimitHit(), "memory limit 64 MiB reached"; got != want {
			t.Errorf("LimitHit = %q, want %q", got, want)
		}
	})
	t.Run("control", func(t *testing.T) {
		g := newGroup(t, p, Limits{})
		if err := helper(t, g, "hog").wait(t); err != nil {
			t.Fatalf("the hog without a limit ended with %v", err)
		}
		if got := g.LimitHit(); got != "" {
			t.Errorf("LimitHit = %q without a limit", got)
		}
	})
}

// forkBomb starts 64 background sleeps; a failed fork ends the shell.
const forkBomb = `read go
i=0
while [ $i -lt 64 ]; do sleep 1000 </dev/null >/dev/null 2>&1 & i=$((i+1)); done
`

// A shell starting 64 processes under pids.max 32 never has more than
// 32 in the run, its forks beyond failing, and LimitHit says so; without
// the limit (the control) all 64 start.
func TestProcessLimitBoundsAForkLoop(t *testing.T) {
	p := limitParent(t, "pids")
	run := func(t *testing.T, l Limits) (*Group, ctlDir) {
		g := newGroup(t, p, l)
		dir, v1, _ := p.ctrl("pids")
		c := g.ctlDir(dir, v1)
		// The shell's exit says only that it is done: 0, or 2 after a
		// failed fork.
		_ = start(t, g, exec.Command("/bin/sh", "-c", forkBomb), false).wait(t)
		return g, c
	}
	t.Run("limited", func(t *testing.T) {
		g, c := run(t, Limits{Pids: 32})
		peak := counter(filepath.Join(c.dir, "pids.peak"), "")
		if peak < 0 {
			peak = counter(filepath.Join(c.dir, "pids.current"), "")
		}
		if peak > 32 || peak < 0 {
			t.Errorf("%d processes under pids.max 32", peak)
		}
		n := counter(filepath.Join(c.dir, "pids.events"), "max")
		if n <= 0 {
			t.Errorf("pids.events max = %d: no fork failed", n)
		}
		t.Logf("at most %d processes, %d forks refused", peak, n)
		if got, want := g.LimitHit(), "process limit 32 reached"; got != want {
			t.Errorf("LimitHit = %q, want %q", got, want)
		}
	})
	t.Run("control", func(t *testing.T) {
		g, c := run(t, Limits{})
		if n := counter(filepath.Join(c.dir, "pids.current"), ""); n != 64 {
			t.Errorf("%d processes without a limit, want the 64 sleeps", n)
		}
		if got := g.LimitHit(); got != "" {
			t.Errorf("LimitHit = %q without a limit", got)
		}
	})
}

// A busy loop under a 0.5-core quota is throttled (cpu.stat
// nr_throttled); the same loop without the limit (the control) burns
// 300 ms of CPU, more than a period's quota, unthrottled. CPU is never a
// LimitHit reason.
func TestCPUQuotaThrottlesABusyLoop(t *testing.T) {
	p := limitParent(t, "cpu")
	dir, v1, _ := p.ctrl("cpu")
	t.Run("limited", func(t *testing.T) {
		g := newGroup(t, p, Limits{CPU: 0.5})
		stat := filepath.Join(g.ctlDir(dir, v1).dir, "cpu.stat")
		if v1 {
			q := counter(filepath.Join(g.ctlDir(dir, v1).dir, "cpu.cfs_quota_us"), "")
			if q != 50000 {
				t.Fatalf("cpu.cfs_quota_us = %d, want 50000", q)
			}
		}
		helper(t, g, "spin")
		waitFor(t, "the busy loop to be throttled", func() bool { return counter(stat, "nr_throttled") > 0 })
		if got := g.LimitHit(); got != "" {
			t.Errorf("LimitHit = %q for CPU throttling", got)
		}
	})
	t.Run("control", func(t *testing.T) {
		g := newGroup(t, p, Limits{})
		stat := filepath.Join(g.ctlDir(dir, v1).dir, "cpu.stat")
		pr := helper(t, g, "spin")
		waitFor(t, "the busy loop to burn 300 ms", func() bool { return cpuTime(pr.cmd.Process.Pid) >= 300*time.Millisecond })
		if n := counter(stat, "nr_throttled"); n != 0 {
			t.Errorf("nr_throttled = %d without a limit", n)
		}
	})
}

// cpuTime is a process's user and system time.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// waitFor polls cond until it holds, failing the test after 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventually.Wait(t, 20*time.Second, what, cond)
}

// pin holds a pidfd of each process in dir, to tell when they are gone
// whatever their pids become.
func pin(t *testing.T, dir string) []int {
	t.Helper()
	pids, err := procs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var fds []int
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		fds = append(fds, fd)
	}
	return fds
}

// allExited reports whether every pinned process has exited (its pidfd
// polls readable).
func allExited(fds []int) bool {
	for _, fd := range fds {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, _ := unix.Poll(pfd, 0); n == 0 {
			return false
		}
	}
	return true
}

// A process that joined only the group's cgroups v1, not its cgroup v2
// (as where there is none), is killed by Close with what it forked, and
// the cgroups go: frozen first with the freezer, and one by one without.
func TestCloseKillsV1Members(t *testing.T) {
	p := limitParent(t)
	if !p.JoinNeeded() {
		t.Skip("no cgroup v1 hierarchy for memory, pids, cpu or freezer here: run cgroups are v2 only")
	}
	for _, freezer := range []bool{true, false} {
		t.Run(fmt.Sprintf("freezer=%v", freezer), func(t *testing.T) {
			g := newGroup(t, p, Limits{})
			if freezer && g.freezer == "" {
				t.Skip("no cgroup v1 freezer hierarchy")
			}
			if !freezer {
				g.freezer = ""
			}
			pr := start(t, g, exec.Command("/bin/sh", "-c", "read go; sleep 1000 & sleep 1000; exit 0"), true)
			dir := g.JoinDirs()[0]
			waitFor(t, "the shell's two sleeps", func() bool { n, _ := procs(dir); return len(n) >= 3 })
			fds := pin(t, dir)
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
			if !killedBy(pr.wait(t), syscall.SIGKILL) {
				t.Error("the shell was not SIGKILLed")
			}
			waitFor(t, "the sleeps to exit", func() bool { return allExited(fds) })
			for _, d := range append(g.JoinDirs(), g.Dir()) {
				if _, err := os.Stat(d); d != "" && !os.IsNotExist(err) {
					t.Errorf("%s still there: %v", d, err)
				}
			}
		})
	}
}

// The cgroups v1 of a gone daemon's run are killed and removed by the
// next Detect, with the process that joined them.
func TestSweepRemovesV1RunCgroupsOfGoneDaemons(t *testing.T) {
	p := limitParent(t)
	if !p.JoinNeeded() {
		t.Skip("no cgroup v1 hierarchy for memory, pids, cpu or freezer here")
	}
	gone := p.own
	gone.pid = 1 << 30 // above pid_max: never a live pid
	name := gone.name(1)
	var dirs []string
	for _, h := range p.v1 {
		dir := filepath.Join(h.dir, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(dir) })
		dirs = append(dirs, dir)
	}
	g := &Group{name: name, v1: dirs}
	t.Cleanup(func() { _ = g.remove() })
	sleeper := start(t, g, exec.Command("/bin/sh", "-c", "read go; exec sleep 1000"), true)
	waitFor(t, "the sleep in the gone daemon's run", func() bool { return inV1(sleeper.cmd.Process.Pid, name) })
	if _, err := DetectLimits(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the gone daemon's run cgroup %s is still there: %v", dir, err)
		}
	}
	if !killedBy(sleeper.wait(t), syscall.SIGKILL) {
		t.Error("the gone daemon's run process was not killed")
	}
}

// A limit without a controller is refused, creating nothing, with the
// fix; Controllers names where each controller is.
func TestMissingControllerIsRefused(t *testing.T) {
	p := limitParent(t)
	bare := &Parent{dir: p.dir, own: p.own, v2: map[string]bool{}, v2Err: p.v2Err}
	if _, err := bare.NewLimited(Limits{MemoryBytes: 4 << 30, Pids: 512}); !errors.Is(err, ErrNoController) ||
		!strings.Contains(err.Error(), "memory limit 4 GiB") || !strings.Contains(err.Error(), "Delegate=yes") {
		t.Errorf("NewLimited without controllers: %v", err)
	}
	mem, pids, cpu, where := bare.Controllers()
	if mem || pids || cpu || !strings.Contains(where, "no memory, pids, cpu controller") {
		t.Errorf("Controllers() = %v %v %v %q", mem, pids, cpu, where)
	}
	mem, pids, cpu, where = p.Controllers()
	t.Logf("here: memory %v, pids %v, cpu %v: %s", mem, pids, cpu, where)
}

// A run guard whose run cgroups are v1 only (no cgroup v2 run cgroup, as
// on a pure v1 host) ends its run with KillOwn: its child and itself.
func TestKillOwnKillsV1Run(t *testing.T) {
	p := limitParent(t)
	if !p.JoinNeeded() {
		t.Skip("no cgroup v1 hierarchy for memory, pids, cpu or freezer here")
	}
	if dir, err := ownDir(); err == nil && strings.HasPrefix(filepath.Base(dir), prefix) {
		t.Skip("the test itself runs in a run cgroup v2")
	}
	g := newGroup(t, p, Limits{})
	pr := start(t, g, helperCmd("killown"), true)
	if err := pr.wait(t); !killedBy(err, syscall.SIGKILL) {
		t.Fatalf("the guard ended with %v, want SIGKILL by itself", err)
	}
	waitFor(t, "the guard's child to die", func() bool { n, _ := g.Populated(); return !n })
}

// The "no internal processes" rule, and the way around it: a cgroup v2
// holding a process cannot enable a controller for its children (the
// control: EBUSY), and enable moves the process to its leaf first and
// then can. Any controller shows it; this uses one the daemon's cgroup
// already hands down, or, where that is a root cgroup (exempt from the
// rule), one enabled in it for the test and disabled after.
func TestEnableMovesProcessesToTheLeaf(t *testing.T) {
	p, err := Detect()
	if err != nil {
		t.Skipf("no cgroup v2 here: %v", err)
	}
	ctrl := ""
	for c := range enabled(p.dir) {
		ctrl = c
	}
	if _, err := os.Stat(filepath.Join(p.dir, "cgroup.events")); ctrl == "" && os.IsNotExist(err) {
		for c := range words(filepath.Join(p.dir, "cgroup.controllers")) {
			sub := filepath.Join(p.dir, "cgroup.subtree_control")
			if os.WriteFile(sub, []byte("+"+c), 0) == nil {
				ctrl = c
				t.Cleanup(func() { _ = os.WriteFile(sub, []byte("-"+c), 0) })
				break
			}
		}
	}
	if ctrl == "" {
		t.Skipf("no controller available to the children of %s (cgroup.controllers %q)", p.dir,
			strings.TrimSpace(string(must(os.ReadFile(filepath.Join(p.dir, "cgroup.controllers"))))))
	}
	scratch := filepath.Join(p.dir, fmt.Sprintf("runcg-test-%d", os.Getpid()))
	if err := os.Mkdir(scratch, 0o755); err != nil {
		t.Fatal(err)
	}
	leaf := filepath.Join(scratch, leafName)
	t.Cleanup(func() {
		_ = os.WriteFile(filepath.Join(scratch, "cgroup.subtree_control"), []byte("-"+ctrl), 0)
		_ = os.Remove(leaf)
		_ = os.Remove(scratch)
	})
	sleeper := startIn(t, scratch)
	t.Cleanup(func() { _ = kill(leaf); _ = kill(scratch); _ = sleeper.Wait() })
	sub := filepath.Join(scratch, "cgroup.subtree_control")
	if err := os.WriteFile(sub, []byte("+"+ctrl), 0); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("enabling %s with a process in the cgroup: %v, want EBUSY", ctrl, err)
	}
	if err := enable(scratch, []string{ctrl}); err != nil {
		t.Fatal(err)
	}
	if !enabled(scratch)[ctrl] {
		t.Errorf("%s not enabled in %s", ctrl, scratch)
	}
	if left, _ := procs(scratch); len(left) != 0 {
		t.Errorf("processes %v left in %s", left, scratch)
	}
	if moved, _ := procs(leaf); len(moved) != 1 || moved[0] != sleeper.Process.Pid {
		t.Errorf("leaf holds %v, want the sleep %d", moved, sleeper.Process.Pid)
	}
}

func must[T any](v T, _ error) T { return v }

// On a host whose cgroup v2 has the memory, pids and cpu controllers
// (systemd Delegate=yes), EnableLimits enables them and NewLimited writes
// memory.max, memory.swap.max, pids.max and cpu.max. Hybrid hosts have
// them on v1 (the other tests cover those); this one then skips.
func TestV2LimitsAreWritten(t *testing.T) {
	p, err := Detect()
	if err != nil {
		t.Skipf("no cgroup v2 here: %v", err)
	}
	avail := words(filepath.Join(p.dir, "cgroup.controllers"))
	var missing []string
	for _, c := range limitCtrls {
		if !avail[c] {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		t.Skipf("cgroup v2 %s lacks the %s controllers (cgroup.controllers %q): they are on cgroup v1 or not delegated",
			p.dir, strings.Join(missing, ", "), strings.TrimSpace(strings.Join(keys(avail), " ")))
	}
	if err := p.EnableLimits(); err != nil {
		t.Fatal(err)
	}
	if mem, pids, cpu, where := p.Controllers(); !mem || !pids || !cpu || !strings.Contains(where, "memory: cgroup v2") {
		t.Fatalf("after EnableLimits: %v %v %v %s", mem, pids, cpu, where)
	}
	g := newGroup(t, p, Limits{MemoryBytes: 64 << 20, Pids: 32, CPU: 0.5})
	for file, want := range map[string]string{"memory.max": "67108864", "pids.max": "32", "cpu.max": "50000 100000"} {
		if b, err := os.ReadFile(filepath.Join(g.Dir(), file)); err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("%s = %q, %v; want %q", file, b, err, want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(g.Dir(), "memory.swap.max")); err == nil && strings.TrimSpace(string(b)) != "0" {
		t.Errorf("memory.swap.max = %q, want 0", b)
	}
	if len(g.JoinDirs()) != 0 {
		t.Errorf("v1 dirs %v with every controller on v2", g.JoinDirs())
	}
}

func keys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
