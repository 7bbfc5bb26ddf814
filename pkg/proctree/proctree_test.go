package proctree

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
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
