package consumer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/nofollow"
	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/pkg/redact"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// DefaultLogMaxBytes caps one attempt's log file when the config sets no cap.
const DefaultLogMaxBytes = 10 << 20

// maxLogLine bounds one line streamed to the daemon's log; a longer line is
// cut there (the file keeps it whole). Output is hostile: nothing it sends
// may grow memory without bound.
const maxLogLine = 4096

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
	if err := lifecycle.OwnLogsRoot(root); err != nil {
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
	root := lifecycle.LogsRoot(e.cfg.WorkDir, e.cfg.LogsDir)
	rls, err := runstate.RunLogs(ctx, e.rdb, req.Ref)
	if err != nil {
		log.Warn("read the ticket's recorded logs", zap.Error(err))
	}
	run := runstate.NextRun(rls, req.Attempt)
	var out *attemptLog
	var name string
	for probe := 0; ; probe++ {
		name = lifecycle.LogName(req.Ref, run, req.Attempt)
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

// ProgressFileEnv names the file a pipeline may append progress lines to
// when its project has progress: comment. Like the result file, its name
// starts with ".agentsmith-" so the work branch never commits it.
const (
	ProgressFileEnv  = "AGENTSMITH_PROGRESS_FILE"
	progressFileName = ".agentsmith-progress.log"
)

// DefaultProgressInterval is the least time between two writes of a run's
// progress comment: every edit is an API call from the token's budget and,
// on some platforms, a notification to the ticket's watchers.
const DefaultProgressInterval = 30 * time.Second

// Bounds on what a progress comment shows: the last lines of a file the
// pipeline writes, hostile like the rest of its output.
const (
	maxProgressBytes = 4 << 10
	maxProgressLines = 30
)

// ProgressFile is where the pipeline of the ticket in workDir may append
// its progress ($AGENTSMITH_PROGRESS_FILE).
func ProgressFile(workDir string) string { return filepath.Join(workDir, progressFileName) }

// readProgress is the tail of the progress file at path: its last complete
// lines (a line still being written is left for the next read), at most
// maxProgressLines of them within the file's last maxProgressBytes, control
// characters stripped and invalid UTF-8 replaced. Only that tail is read,
// however large the file grows. "" when there is nothing (yet) to show.
//
// The file is read only when it is a regular file with one link owned by
// owner, the run's uid (nofollow.OpenRegular): a link (symbolic or hard)
// to a file only the daemon may read, or a FIFO that would hang the read,
// is refused, and the error (wrapping nofollow.ErrRefused) says why. A
// file that is missing or cannot be opened is "" and no error.
func readProgress(path string, owner int) (string, error) {
	f, err := nofollow.OpenRegular(filepath.Dir(path), filepath.Base(path), owner)
	if errors.Is(err, nofollow.ErrRefused) {
		return "", err
	}
	if err != nil {
		return "", nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", nil
	}
	from := max(fi.Size()-maxProgressBytes, 0)
	b, err := io.ReadAll(io.LimitReader(io.NewSectionReader(f, from, maxProgressBytes), maxProgressBytes))
	if err != nil {
		return "", nil
	}
	s := string(b)
	if from > 0 {
		// The tail starts mid-line: drop the partial first line.
		_, s, _ = strings.Cut(s, "\n")
	}
	end := strings.LastIndexByte(s, '\n')
	if end < 0 {
		return "", nil
	}
	lines := strings.Split(s[:end], "\n")
	lines = lines[max(len(lines)-maxProgressLines, 0):]
	return strings.TrimSpace(lifecycle.StripControl(strings.ToValidUTF8(strings.Join(lines, "\n"), "\uFFFD"))), nil
}

// progressBody is a progress comment: a headline and the lines in a code
// fence longer than any backtick run in them, so the pipeline's text can
// never break out of the block (on Jira the tracker turns the fence into a
// {code} block), its @mentions broken (platforms.NoMentions). Its size is
// bounded by maxProgressBytes, far below every platform's comment limit.
func progressBody(prefix string, attempt int, instance, lines string) string {
	lines = platforms.NoMentions(lines)
	fence := strings.Repeat("`", max(3, longestRun(lines, '`')+1))
	return fmt.Sprintf("**%s**: in progress (attempt %d, instance %s)\n\nLatest progress:\n\n%s\n%s\n%s\n",
		prefix, attempt, lifecycle.StripControl(instance), fence, lines, fence)
}

// progressComment keeps one run's progress comment: posted when the first
// line appears, then edited in place when the lines change, never more
// often than every. It writes only while the run is its replica's (fence)
// and at low priority in the token's shared budget, so claims and run
// transitions spend first. A failed write is logged and left for the next
// change; it never touches the run.
type progressComment struct {
	ed   platforms.CommentEditor
	ref  platforms.Ref
	path string
	// owner is the run's uid: the file is read only when it is its
	// (readProgress).
	owner int
	every time.Duration
	body  func(lines string) string
	fence func(context.Context) error
	clock func() time.Time
	log   *zap.Logger

	id      string    // the comment's id once posted
	shown   string    // the lines last written
	lastTry time.Time // the last write, successful or not
	// refused is why the file was first refused ("" while it never was):
	// logged once, named in the outcome's comment.
	refused string
}

// run reads the file every poll and writes when due, until ctx ends; then
// it writes once more if the lines changed and the interval allows.
func (c *progressComment) run(ctx context.Context, poll time.Duration) {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			// The pipeline has ended: its last lines, within the budget.
			c.update(context.WithoutCancel(ctx))
			return
		case <-t.C:
			c.update(ctx)
		}
	}
}

// update writes the comment if the lines changed and the interval since the
// last write has passed.
func (c *progressComment) update(ctx context.Context) {
	lines, rerr := readProgress(c.path, c.owner)
	if rerr != nil && c.refused == "" {
		c.refused = refusal(rerr)
		c.log.Warn("progress file refused, not read", zap.String("path", c.path), zap.String("why", c.refused))
	}
	now := c.clock()
	if lines == "" || lines == c.shown || (!c.lastTry.IsZero() && now.Sub(c.lastTry) < c.every) {
		return
	}
	c.lastTry = now
	cctx, cancel := context.WithTimeout(ctx, lifecycle.CommentTimeout)
	defer cancel()
	if err := c.fence(cctx); err != nil {
		return // the run is not ours any more: no write at all
	}
	cctx = trackerhttp.WithPriority(trackerhttp.WithFence(cctx, c.fence), trackerhttp.PriorityLow)
	body := c.body(lines)
	var err error
	if c.id != "" {
		err = c.ed.EditComment(cctx, c.ref, c.id, body)
		if errors.Is(err, platforms.ErrNotFound) {
			// Deleted by a person: post a new one.
			c.id, err = "", nil
		}
	}
	if c.id == "" && err == nil {
		c.id, err = c.ed.AddComment(cctx, c.ref, body)
	}
	if err != nil {
		c.log.Warn("progress comment not written; trying again on the next change", zap.Error(err))
		return
	}
	c.shown = lines
}

// What a pipeline prints or writes is hostile and, through the comments,
// public: a prompt-injected agent prints its secrets, and lines like
// "/close" or "@dependabot merge" are commands to the tracker or its bots.
// Every path from the pipeline to the outside goes through here:
//
//   - the output stream is redacted before the attempt log, the daemon's
//     debug log of pipeline lines and the failure comment's tail see it
//     (redactedOutput), so agentsmithctl logs and the status page, which
//     read the log file, show it redacted too;
//   - the result file and the progress lines are redacted when read
//     (redactResult, the progress comment's body), their @mentions broken;
//   - pipeline text a comment shows escaped for its markup is redacted
//     before it is escaped (escapeFor): an escaped secret ("ghp\_x") is no
//     longer one the Redactor knows, yet the tracker renders it as one;
//   - the result's description (git's stderr on a failed Prepare) is
//     redacted before the audit stream, the status page and the daemon's
//     log see it, and errors of the work branch's save before they are
//     logged;
//   - every comment body is redacted once more as a whole and has no line
//     starting with "/" (lifecycle.SafeComment), on every platform.

// redactedOutput is the pipeline's output stream as the daemon keeps it:
// redacted (a secret split across writes included), then written to the
// attempt log (when there is one) and to a tail of tailBytes kept for the
// failure comment in place of procrun's, which holds the raw output.
type redactedOutput struct {
	w    *redact.Writer
	tail []byte
	max  int
}

// newRedactedOutput redacts r's secrets from the stream on its way to log
// (nil: no log file).
func newRedactedOutput(r *redact.Redactor, log io.Writer, tailBytes int) *redactedOutput {
	if tailBytes <= 0 {
		tailBytes = procrun.DefaultTailBytes
	}
	o := &redactedOutput{max: tailBytes}
	o.w = redact.NewWriter(r, writerFunc(func(p []byte) (int, error) {
		if log != nil {
			_, _ = log.Write(p)
		}
		o.tail = append(o.tail, p...)
		if len(o.tail) > 2*o.max {
			o.tail = append(o.tail[:0], o.tail[len(o.tail)-o.max:]...)
		}
		return len(p), nil
	}))
	return o
}

// Write never fails, like the attempt log.
func (o *redactedOutput) Write(p []byte) (int, error) {
	_, _ = o.w.Write(p)
	return len(p), nil
}

// finish writes what the redactor held back and returns the tail, starting
// at a rune boundary.
func (o *redactedOutput) finish() []byte {
	_ = o.w.Flush()
	t := o.tail
	if len(t) > o.max {
		t = t[len(t)-o.max:]
		for len(t) > 0 && !utf8.RuneStart(t[0]) {
			t = t[1:]
		}
	}
	return append([]byte(nil), t...)
}

// redactOutput is the stream the pipeline's output goes to: the project's
// secrets redacted before out (nil: no log file) and the tail see it.
func (a *attempt) redactOutput(out *attemptLog) *redactedOutput {
	var log io.Writer
	if out != nil {
		log = out
	}
	return newRedactedOutput(a.p.Redact, log, a.e.cfg.TailBytes)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// redactResult is res with r's secrets replaced in the summary and the link
// titles (renderResult breaks their @mentions); a link whose URL carries a secret in
// any form (raw, or decoded from its percent-encoding) is left out with a
// note: a redacted URL would lead nowhere.
func redactResult(r *redact.Redactor, res Result) (Result, []string) {
	res.Summary = r.String(res.Summary)
	links, dropped := res.Links[:0:0], 0
	for _, l := range res.Links {
		raw, _ := url.PathUnescape(l.URL)
		if r.Contains(l.URL) || r.Contains(raw) {
			dropped++
			continue
		}
		l.Title = r.String(l.Title)
		links = append(links, l)
	}
	res.Links = links
	if dropped > 0 {
		return res, []string{fmt.Sprintf("result file: %d link(s) left out: they carried a secret", dropped)}
	}
	return res, nil
}
