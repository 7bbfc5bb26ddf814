package lifecycle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/agentsmithd/agentsmithd/pkg/nofollow"
	"github.com/agentsmithd/agentsmithd/pkg/owndir"
)

// Errors of OpenLog.
var (
	ErrLogOutsideRoots = errors.New("not under this replica's logs dir")
	ErrLogNotHere      = errors.New("not on this replica")
)

// OpenLog opens the attempt log at path (as recorded in Redis, which is not
// trusted to name any file here) for reading when it is a regular file
// under one of roots, the logs dirs. No link beneath the root is followed:
// a link in place of a log would otherwise show whatever file it names.
// A missing file is ErrLogNotHere, a path outside every root
// ErrLogOutsideRoots.
func OpenLog(roots []string, path string) (*os.File, error) {
	clean := filepath.Clean(path)
	for _, root := range roots {
		if root == "" {
			continue
		}
		rel, err := filepath.Rel(filepath.Clean(root), clean)
		if err != nil || !filepath.IsLocal(rel) {
			continue
		}
		// O_NONBLOCK: a FIFO must not hang the reader; it is refused below.
		f, err := nofollow.OpenFile(root, filepath.ToSlash(rel), os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", path, ErrLogNotHere)
		}
		if err != nil {
			return nil, err
		}
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			f.Close()
			return nil, fmt.Errorf("%s: not a regular file", path)
		}
		return f, nil
	}
	return nil, fmt.Errorf("%s: %w", path, ErrLogOutsideRoots)
}

// OwnLogsRoot creates the logs root (0750) when missing and refuses one
// that another user owns or that group or others may write: whoever can
// write there can plant a link or a hard link in place of the next log.
func OwnLogsRoot(root string) error {
	if err := owndir.Ensure(root, 0o750); err != nil {
		return fmt.Errorf("logs dir: %w", err)
	}
	return nil
}
