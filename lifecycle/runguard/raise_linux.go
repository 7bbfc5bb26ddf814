package runguard

import (
	"os"
	"syscall"
	"unsafe"
)

// raise ends the guard by sig, with the kernel's default action, so its
// parent sees "killed by sig" as it would have from the pipeline. The Go
// runtime keeps its own handler for every signal (and ignores some, such as
// SIGUSR1, when nothing is notified), so the disposition is set to SIG_DFL
// with rt_sigaction directly: an all-zero struct sigaction is SIG_DFL with
// no flags and an empty mask on every Linux architecture.
func raise(sig syscall.Signal) {
	var act [4]uint64
	_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	_ = syscall.Kill(os.Getpid(), sig)
}
