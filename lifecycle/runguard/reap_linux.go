package runguard

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

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
	deadline := time.Now().Add(reapTimeout)
	killed := 0
	signalled := map[int]bool{}
	for {
		left := false
		for _, c := range children() {
			switch {
			case !exited(c):
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
	for _, c := range children() {
		if c.PID != pipeline && exited(c) {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(c.PID, &ws, syscall.WNOHANG, nil)
		}
	}
}

// children are the guard's children. They come from the guard's own
// /proc/self/task/*/children, which it always sees: under
// hidepid=invisible (systemd ProtectProc=invisible) a guard without
// CAP_SYS_PTRACE sees no /proc/<pid> of a run_as pipeline's processes,
// and a scan of /proc would find none of them. Only a kernel without
// CONFIG_PROC_CHILDREN falls back to that scan. Killing them needs no
// more than seeing their pids (CAP_KILL, as root).
func children() []proctree.Proc {
	cs, err := proctree.OwnChildren()
	if err != nil {
		return proctree.Children(os.Getpid())
	}
	return cs
}

// exited reports whether the child c is a zombie, from its stat or, where
// that is hidden, by asking the kernel without reaping it (WNOWAIT).
func exited(c proctree.Proc) bool {
	if c.State != 0 {
		return c.State == 'Z'
	}
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, c.PID, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err == nil && info.Signo == int32(syscall.SIGCHLD)
}
