package lifecycle

import (
	"path/filepath"
	"strconv"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// LogsRoot is the directory holding every ticket's attempt logs: logsDir
// when set, else DefaultLogsDir(workRoot). It is the daemon's alone: the
// logs are never in a work dir, where a pipeline could plant a link in
// place of the next attempt's log and have the daemon write through it.
func LogsRoot(workRoot, logsDir string) string {
	if logsDir == "" {
		return DefaultLogsDir(workRoot)
	}
	return logsDir
}

// DefaultLogsDir is the logs dir next to the work root: {work_root}-logs.
func DefaultLogsDir(workRoot string) string { return filepath.Clean(workRoot) + "-logs" }

// LogDir is where a ticket's attempt logs live: {logs root}/{project}/{ticket}.
func LogDir(workRoot, logsDir string, ref platforms.Ref) string {
	return WorkDir(LogsRoot(workRoot, logsDir), ref)
}

// LogPath is one attempt's log file: attempt of the ticket's run.
func LogPath(workRoot, logsDir string, ref platforms.Ref, run, attempt int) string {
	return filepath.Join(LogsRoot(workRoot, logsDir), LogName(ref, run, attempt))
}

// LogName is an attempt's log file relative to the logs root:
// attempt-{attempt}.log in run 1, the name every log had before runs were
// numbered, and run-{run}-attempt-{attempt}.log in a later run. Only
// numbers go into the name, never text from the tracker.
func LogName(ref platforms.Ref, run, attempt int) string {
	base := "attempt-" + strconv.Itoa(attempt) + ".log"
	if run > 1 {
		base = "run-" + strconv.Itoa(run) + "-" + base
	}
	return filepath.Join(ticketRel(ref), base)
}
