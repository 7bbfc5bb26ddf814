//go:build linux

package proctree

import (
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// OwnChildren finds the caller's children, the zombie among them.
func TestOwnChildren(t *testing.T) {
	live := exec.Command("sleep", "30")
	dead := exec.Command("true")
	for _, c := range []*exec.Cmd{live, dead} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
	// dead exits on its own; wait for it without reaping it.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, dead.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	got, err := OwnChildren()
	if err != nil {
		t.Skipf("no /proc/self/task/*/children (CONFIG_PROC_CHILDREN): %v", err)
	}
	states := map[int]byte{}
	for _, p := range got {
		states[p.PID] = p.State
	}
	if s, ok := states[live.Process.Pid]; !ok || s == 'Z' {
		t.Errorf("children %v: the live child %d is missing or a zombie", got, live.Process.Pid)
	}
	if s := states[dead.Process.Pid]; s != 'Z' {
		t.Errorf("children %v: the exited child %d is not a zombie", got, dead.Process.Pid)
	}
}
