//go:build !unix

package runguard

import "os"

// ReportFile is the guard's report pipe at fd; where fds cannot be
// checked, as the daemon passed it.
func ReportFile(fd uintptr) *os.File { return os.NewFile(fd, "report") }
