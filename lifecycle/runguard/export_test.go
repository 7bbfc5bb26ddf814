package runguard

// SetDaemonPID replaces the parent pid guards expect, for the test of a
// daemon that died; it returns the restore function.
func SetDaemonPID(pid int) (restore func()) {
	old := daemonPID
	daemonPID = func() int { return pid }
	return func() { daemonPID = old }
}
