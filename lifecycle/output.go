package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/nofollow"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// DefaultLogMaxBytes caps one attempt's log file when the config sets no cap.
const DefaultLogMaxBytes = 10 << 20

// maxLogLine bounds one line streamed to the daemon's log; a longer line is
// cut there (the file keeps it whole). Output is hostile: nothing it sends
// may grow memory without bound.
const maxLogLine = 4096

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
	return filepath.Join(LogsRoot(workRoot, logsDir), logName(ref, run, attempt))
}

// logName is an attempt's log file relative to the logs root:
// attempt-{attempt}.log in run 1, the name every log had before runs were
// numbered, and run-{run}-attempt-{attempt}.log in a later run. Only
// numbers go into the name, never text from the tracker.
func logName(ref platforms.Ref, run, attempt int) string {
	base := "attempt-" + strconv.Itoa(attempt) + ".log"
	if run > 1 {
		base = "run-" + strconv.Itoa(run) + "-" + base
	}
	return filepath.Join(ticketRel(ref), base)
}

// maxRunProbe bounds how many run numbers openOutput tries past the one
// Redis suggests when the files are already there.
const maxRunProbe = 1000

// attemptLog keeps one attempt's full output: a file capped at max bytes,
// and each line at debug level in the daemon's log with the ticket and
// attempt. Write never fails, so a full disk cannot fail the pipeline.
type attemptLog struct {
	f         *os.File
	written   int64
	max       int64
	truncated bool
	log       *zap.Logger // nil when debug is off
	line      []byte
}

// openAttemptLog creates the log name beneath root; an existing file is
// fs.ErrExist, never truncated: it is an earlier run's log. No link is
// followed under root, and root must be the daemon's alone.
func openAttemptLog(root, name string, maxBytes int64, log *zap.Logger) (*attemptLog, error) {
	if err := ownLogsRoot(root); err != nil {
		return nil, err
	}
	if err := nofollow.MkdirAll(root, filepath.Dir(name), 0o750); err != nil {
		return nil, fmt.Errorf("log dir: %w", err)
	}
	f, err := nofollow.OpenFile(root, name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	if maxBytes <= 0 {
		maxBytes = DefaultLogMaxBytes
	}
	a := &attemptLog{f: f, max: maxBytes}
	if log.Core().Enabled(zap.DebugLevel) {
		a.log = log
		a.line = make([]byte, 0, maxLogLine)
	}
	return a, nil
}

func (a *attemptLog) Write(p []byte) (int, error) {
	room := a.max - a.written
	if room > 0 {
		n, _ := a.f.Write(p[:min(int64(len(p)), room)])
		a.written += int64(n)
	}
	if int64(len(p)) > room {
		a.truncated = true
	}
	if a.log != nil {
		a.stream(p)
	}
	return len(p), nil
}

// stream logs complete lines; a line longer than maxLogLine is logged in
// pieces of that size.
func (a *attemptLog) stream(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		var part []byte
		if i < 0 {
			part, p = p, nil
		} else {
			part, p = p[:i], p[i+1:]
		}
		for len(part) > 0 {
			n := min(len(part), maxLogLine-len(a.line))
			a.line = append(a.line, part[:n]...)
			part = part[n:]
			if len(a.line) == maxLogLine {
				a.flush()
			}
		}
		if i >= 0 {
			a.flush()
		}
	}
}

func (a *attemptLog) flush() {
	if len(a.line) > 0 {
		// A copy: a core may keep the field after Debug returns (the
		// buffer is reused).
		a.log.Debug("pipeline output", zap.String("line", strings.ToValidUTF8(string(a.line), "\uFFFD")))
		a.line = a.line[:0]
	}
}

// Close flushes the last partial line and marks a truncated file.
func (a *attemptLog) Close() error {
	if a.log != nil {
		a.flush()
	}
	if a.truncated {
		fmt.Fprintf(a.f, "\n[agentsmithd: output truncated at %d bytes (consumer.output.log_max_bytes)]\n", a.max)
	}
	return a.f.Close()
}

// openOutput opens the attempt's log file and records where it is; on
// failure the run goes ahead without one (the failure comment still has
// the tail) and the problem is logged. The attempt's run comes from the
// recorded logs (runstate.NextRun), so an operator's retry, which starts
// over at attempt 1, writes new files beside the failed run's. A file
// already there (Redis lost or expired the records while the disk kept the
// files) moves the attempt on to the next run: no log is ever overwritten.
func (a *attempt) openOutput(ctx context.Context) *attemptLog {
	e, req, log := a.e, a.req, a.log
	root := LogsRoot(e.cfg.WorkDir, e.cfg.LogsDir)
	rls, err := runstate.RunLogs(ctx, e.rdb, req.Ref)
	if err != nil {
		log.Warn("read the ticket's recorded logs", zap.Error(err))
	}
	run := runstate.NextRun(rls, req.Attempt)
	var out *attemptLog
	var name string
	for probe := 0; ; probe++ {
		name = logName(req.Ref, run, req.Attempt)
		out, err = openAttemptLog(root, name, e.cfg.LogMaxBytes, log)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || probe == maxRunProbe {
			log.Warn("pipeline output not kept", zap.Error(err))
			return nil
		}
		run++
	}
	path := filepath.Join(root, name)
	if err := runstate.RecordRunLog(ctx, e.rdb, req.Ref, runstate.RunLog{Run: run, Attempt: req.Attempt, Instance: e.cfg.Instance, Path: path,
		Started: e.cfg.Clock().UTC()}); err != nil {
		log.Warn("record the attempt's log file", zap.String("path", path), zap.Error(err))
	}
	return out
}
