//go:build unix

package runguard

import (
	"os"
	"syscall"
)

// ReportFile is the guard's report pipe at fd, or nil when fd is not an
// open pipe: a daemon older than the report pipe starts this binary with
// fd 3 alone, and the fd number may then be one the guard opens itself (a
// socket, the runtime's poller), which a report must never write or close.
func ReportFile(fd uintptr) *os.File {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(fd), &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return nil
	}
	return os.NewFile(fd, "report")
}
