//go:build linux

package runcg

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A process outside a run cgroup (the test, as the daemon) never kills
// its own cgroup: KillOwn refuses it.
func TestKillOwnRefusesANonRunCgroup(t *testing.T) {
	if _, err := Detect(); err != nil {
		t.Skipf("no run cgroups here: %v", err)
	}
	if err := KillOwn(); err == nil {
		t.Fatal("KillOwn killed the test's own cgroup")
	}
}

// A group is created below the parent, and Close removes it.
func TestGroupIsRemoved(t *testing.T) {
	p, err := Detect()
	if err != nil {
		t.Skipf("no run cgroups here: %v", err)
	}
	g, err := p.New()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(g.Dir()) != p.Dir() {
		t.Errorf("group %s is not below %s", g.Dir(), p.Dir())
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.Dir()); !os.IsNotExist(err) {
		t.Errorf("group %s still there: %v", g.Dir(), err)
	}
}

func TestWithin(t *testing.T) {
	for _, c := range []struct {
		path, root, rel string
		ok              bool
	}{
		{"/a/b", "/", "/a/b", true},
		{"/a/b", "/a", "/b", true},
		{"/a", "/a", "/", true},
		{"/ab", "/a", "", false},
	} {
		if rel, ok := within(c.path, c.root); rel != c.rel || ok != c.ok {
			t.Errorf("within(%q, %q) = %q %v, want %q %v", c.path, c.root, rel, ok, c.rel, c.ok)
		}
	}
}

// A run cgroup left by a daemon that is gone (its pid free, or its pid
// now another process's: the start time differs) is killed and removed by
// the next Detect; one of a live daemon is kept.
func TestDetectSweepsRunCgroupsOfGoneDaemons(t *testing.T) {
	p, err := Detect()
	if err != nil {
		t.Skipf("no run cgroups here: %v", err)
	}
	freePid := p.own
	freePid.pid = 1 << 30 // above pid_max: never a live pid
	reused := p.own       // a daemon before this one that had this pid
	reused.start--
	var gone []string
	for _, o := range []owner{freePid, reused} {
		dir := filepath.Join(p.Dir(), o.name(1))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(dir) })
		gone = append(gone, dir)
	}
	sleeper := startIn(t, gone[1])
	live, err := p.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Close() })
	if _, err := Detect(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range gone {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the gone daemon's run cgroup %s is still there: %v", dir, err)
		}
	}
	if err := sleeper.Wait(); err == nil {
		t.Error("the gone daemon's run process was not killed")
	}
	if _, err := os.Stat(live.Dir()); err != nil {
		t.Errorf("the live daemon's run cgroup was removed: %v", err)
	}
}

// Two daemons in one process (the multi-daemon tests, embedders) share
// its pid and cgroup; their runs' cgroups still never collide.
func TestParentsInOneProcessDoNotCollide(t *testing.T) {
	var ps [2]*Parent
	for i := range ps {
		p, err := Detect()
		if err != nil {
			t.Skipf("no run cgroups here: %v", err)
		}
		ps[i] = p
	}
	// Every group stays until all are made, as runs overlap.
	const runs = 20
	groups := make(chan *Group, 2*runs)
	errs := make(chan error, 2*runs)
	var wg sync.WaitGroup
	for _, p := range ps {
		for range runs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				g, err := p.New()
				if err != nil {
					errs <- err
					return
				}
				groups <- g
			}()
		}
	}
	wg.Wait()
	close(errs)
	close(groups)
	for g := range groups {
		if err := g.Close(); err != nil {
			t.Error(err)
		}
	}
	for err := range errs {
		t.Error(err)
	}
}

// A daemon in another pid namespace sharing the cgroup: its pid means
// nothing here, so its populated run cgroup is left alone, however free
// its pid looks here and however old the cgroup is.
func TestSweepLeavesAPopulatedCgroupOfAnotherPidNamespace(t *testing.T) {
	p, err := Detect()
	if err != nil {
		t.Skipf("no run cgroups here: %v", err)
	}
	other := owner{pid: 1 << 30, start: 1, pidns: p.own.pidns + 1}
	dir := filepath.Join(p.Dir(), other.name(1))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	g := &Group{dir: dir}
	t.Cleanup(func() { _ = g.remove() })
	sleeper := startIn(t, dir)
	p.sweep(time.Now().Add(2 * staleAge))
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the other namespace's run cgroup was removed: %v", err)
	}
	if populated, err := g.Populated(); err != nil || !populated {
		t.Errorf("the other namespace's run was killed: populated %v, %v", populated, err)
	}
	_ = g.Kill()
	_ = sleeper.Wait()
}

// startIn starts a sleep in the cgroup dir; the test's cleanup kills it.
func startIn(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	fd, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(fd.Fd())}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd
}
