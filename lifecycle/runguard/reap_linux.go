package runguard

import (
	"os"
	"syscall"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/proctree"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER (Linux 3.4).
const prSetChildSubreaper = 36

// reapTimeout bounds killDescendants: SIGKILL is not catchable, so only a
// process stuck in the kernel, or a fork bomb outrunning the rounds, lasts
// that long.
const reapTimeout = 10 * time.Second

// becomeSubreaper makes the guard the subreaper of everything the pipeline
// starts: a process whose parent dies, even one that left the pipeline's
// process group and session (setsid, a double fork), is re-parented to the
// guard rather than to init, so the guard can find and kill it.
func becomeSubreaper() error {
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// pipelineAttr is how the pipeline is started: as cred, and killed when
// the guard dies (PR_SET_PDEATHSIG: the guard's thread, which Main locks).
func pipelineAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
}

// killDescendants SIGKILLs every process below the guard and reaps it,
// except pipeline (the pid os/exec waits for; 0 when already reaped),
// which it kills but leaves to os/exec. It only ever signals the guard's
// own children, whose pids cannot be reused before the guard reaps them;
// each killed child's children are re-parented to the guard (its
// subreaper) as it exits, and the next round kills them, until none is
// left. It returns how many processes it killed.
func killDescendants(pipeline int) int {
	self := os.Getpid()
	deadline := time.Now().Add(reapTimeout)
	killed := 0
	signalled := map[int]bool{}
	for {
		left := false
		for _, c := range proctree.Children(self) {
			switch {
			case c.State != 'Z':
				left = true
				if !signalled[c.PID] {
					signalled[c.PID] = true
					killed++
				}
				_ = syscall.Kill(c.PID, syscall.SIGKILL)
			case c.PID != pipeline:
				var ws syscall.WaitStatus
				_, _ = syscall.Wait4(c.PID, &ws, syscall.WNOHANG, nil)
				left = true // its reaping may have re-parented none, but look again
				delete(signalled, c.PID)
			}
		}
		if !left || time.Now().After(deadline) {
			return killed
		}
		time.Sleep(time.Millisecond) // the killed exit and hand their children over
	}
}

// reapOrphans reaps the zombies re-parented to the guard while the
// pipeline runs (daemons it started that have since exited), so they do
// not hold pids until the run ends. pipeline is os/exec's to reap.
func reapOrphans(pipeline int) {
	for _, c := range proctree.Children(os.Getpid()) {
		if c.State == 'Z' && c.PID != pipeline {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(c.PID, &ws, syscall.WNOHANG, nil)
		}
	}
}
