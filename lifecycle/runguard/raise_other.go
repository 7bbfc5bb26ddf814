//go:build !linux

package runguard

import (
	"os"
	"os/signal"
	"syscall"
)

// raise ends the guard by sig where the Go runtime lets it (SIGTERM,
// SIGINT, SIGHUP, SIGKILL); Main falls back to exit status 128+sig.
func raise(sig syscall.Signal) {
	signal.Reset(sig)
	_ = syscall.Kill(os.Getpid(), sig)
}
