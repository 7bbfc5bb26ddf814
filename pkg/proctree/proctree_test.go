package proctree

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A child started as its own group leader is found; one sharing our group
// is not.
func TestChildGroups(t *testing.T) {
	leader := exec.Command("sleep", "30")
	leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	same := exec.Command("sleep", "30")
	for _, c := range []*exec.Cmd{leader, same} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
	got := ChildGroups(os.Getpid())
	if !slices.Contains(got, leader.Process.Pid) {
		t.Errorf("groups %v miss the group leader %d", got, leader.Process.Pid)
	}
	if slices.Contains(got, same.Process.Pid) {
		t.Errorf("groups %v include %d, which is not a group leader", got, same.Process.Pid)
	}
}

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
