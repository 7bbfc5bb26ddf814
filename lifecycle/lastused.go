package lifecycle

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/nofollow"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// usedMarkName is the file, in a ticket's directory under the logs root,
// that says when the daemon last used the ticket's work dir: the time of
// the daemon's clock, as text. Retention dates a ticket by it, never by a
// file time: the pipeline can set every time in its work dir (touch -d),
// and must not have another ticket's files removed or keep its own forever.
const usedMarkName = "last-used"

// maxUsedMark bounds what is read of a mark.
const maxUsedMark = 64

// ticketRel is a ticket's directory relative to the work root or the logs
// root.
func ticketRel(ref platforms.Ref) string {
	return filepath.Join(pathSegment(ref.Project), TicketDirName(ref.Platform, ref.ID))
}

// MarkUsed records at as when ref's work dir was last used.
func MarkUsed(logsRoot string, ref platforms.Ref, at time.Time) error {
	return MarkTicketDirUsed(logsRoot, ticketRel(ref), at)
}

// MarkTicketDirUsed records at as when the ticket whose directory is
// ticketDir ({project}/{ticket}, as under the work root) was last used.
func MarkTicketDirUsed(logsRoot, ticketDir string, at time.Time) error {
	if err := OwnLogsRoot(logsRoot); err != nil {
		return err
	}
	if err := nofollow.MkdirAll(logsRoot, ticketDir, 0o750); err != nil {
		return fmt.Errorf("last-use mark: %w", err)
	}
	f, err := nofollow.OpenFile(logsRoot, filepath.Join(ticketDir, usedMarkName), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o640)
	if err != nil {
		return fmt.Errorf("last-use mark: %w", err)
	}
	_, err = f.WriteString(at.UTC().Format(time.RFC3339Nano) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("last-use mark: %w", err)
	}
	return nil
}

// LastUsed is when the ticket whose directory is ticketDir was last used,
// as MarkTicketDirUsed recorded it; an error satisfying
// errors.Is(err, fs.ErrNotExist) when nothing was recorded.
func LastUsed(logsRoot, ticketDir string) (time.Time, error) {
	f, err := nofollow.Open(logsRoot, filepath.Join(ticketDir, usedMarkName))
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxUsedMark))
	if err != nil {
		return time.Time{}, fmt.Errorf("last-use mark: %w", err)
	}
	at, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
	if err != nil {
		return time.Time{}, fmt.Errorf("last-use mark %s: %w", filepath.Join(logsRoot, ticketDir), err)
	}
	return at, nil
}
