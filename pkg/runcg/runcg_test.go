//go:build linux

package runcg

import (
	"os"
	"path/filepath"
	"testing"
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

// A run cgroup left by a daemon that is gone (its pid free) is killed and
// removed by the next Detect; one of a live daemon is kept.
func TestDetectSweepsRunCgroupsOfGoneDaemons(t *testing.T) {
	p, err := Detect()
	if err != nil {
		t.Skipf("no run cgroups here: %v", err)
	}
	gone := filepath.Join(p.Dir(), prefix+"999999999-1") // above pid_max: never a live pid
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(gone) })
	live, err := p.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Close() })
	if _, err := Detect(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("the gone daemon's run cgroup is still there: %v", err)
	}
	if _, err := os.Stat(live.Dir()); err != nil {
		t.Errorf("the live daemon's run cgroup was removed: %v", err)
	}
}
