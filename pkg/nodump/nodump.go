// Package nodump keeps the daemon's secrets out of reach of processes that
// run as the same user, its pipelines first: on Linux, /proc/{pid}/environ,
// /proc/{pid}/mem and ptrace of a process are allowed to the same uid only
// while the process is "dumpable". The daemon's tokens and webhook secrets
// live in its environment and memory, and a pipeline is a child of it, so
// `cat /proc/$PPID/environ` read them all until the daemon cleared the flag.
package nodump

// Enable makes the calling process non-dumpable (prctl PR_SET_DUMPABLE 0 on
// Linux; nothing elsewhere). Call it early in main, before secrets are read
// and before any pipeline starts. The flag survives for the process's life
// but is reset by execve, so it protects only the daemon itself, not its
// children (each pipeline can read its own environment, as it should).
func Enable() error { return enable() }
