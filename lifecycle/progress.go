package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

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
func readProgress(path string) string {
	// Not followed through a symlink: the pipeline must not make the daemon
	// show a file only the daemon may read.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	from := max(fi.Size()-maxProgressBytes, 0)
	b, err := io.ReadAll(io.LimitReader(io.NewSectionReader(f, from, maxProgressBytes), maxProgressBytes))
	if err != nil {
		return ""
	}
	s := string(b)
	if from > 0 {
		// The tail starts mid-line: drop the partial first line.
		_, s, _ = strings.Cut(s, "\n")
	}
	end := strings.LastIndexByte(s, '\n')
	if end < 0 {
		return ""
	}
	lines := strings.Split(s[:end], "\n")
	lines = lines[max(len(lines)-maxProgressLines, 0):]
	return strings.TrimSpace(stripControl(strings.ToValidUTF8(strings.Join(lines, "\n"), "\uFFFD")))
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
		prefix, attempt, stripControl(instance), fence, lines, fence)
}

// progressComment keeps one run's progress comment: posted when the first
// line appears, then edited in place when the lines change, never more
// often than every. It writes only while the run is its replica's (fence)
// and at low priority in the token's shared budget, so claims and run
// transitions spend first. A failed write is logged and left for the next
// change; it never touches the run.
type progressComment struct {
	ed    platforms.CommentEditor
	ref   platforms.Ref
	path  string
	every time.Duration
	body  func(lines string) string
	fence func(context.Context) error
	clock func() time.Time
	log   *zap.Logger

	id      string    // the comment's id once posted
	shown   string    // the lines last written
	lastTry time.Time // the last write, successful or not
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
	lines := readProgress(c.path)
	now := c.clock()
	if lines == "" || lines == c.shown || (!c.lastTry.IsZero() && now.Sub(c.lastTry) < c.every) {
		return
	}
	c.lastTry = now
	cctx, cancel := context.WithTimeout(ctx, commentTimeout)
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
