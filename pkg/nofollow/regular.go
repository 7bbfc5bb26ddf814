//go:build unix

package nofollow

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ErrRefused is wrapped by every error OpenRegular gives for a file it
// opened and would not hand out: not a regular file, more than one link,
// or another owner. errors.Is(err, ErrRefused) tells such a file from one
// that is missing or could not be opened.
var ErrRefused = errors.New("refused")

// RefusedError says why OpenRegular refused a file; its message names the
// reason only ("hard link (2 links)"), never the file's content.
type RefusedError struct {
	// Reason is what was wrong with the file.
	Reason string
	// Err is the system's error when there was one (ELOOP for a link).
	Err error
}

func (e *RefusedError) Error() string { return e.Reason }

// Unwrap is the system's error, if any.
func (e *RefusedError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// OpenRegular opens name beneath root for reading as Open does, no link
// followed on the way or at the end, and hands out the file only when the
// opened descriptor (fstat, so what is checked is what is read) is a
// regular file with exactly one link and, when owner >= 0, owned by uid
// owner. A file the pipeline's user wrote in its work dir passes; what
// else a hostile pipeline may leave there does not:
//
//   - a hard link to a file elsewhere (possible without owning it where
//     fs.protected_hardlinks is 0): the daemon, which may be root, would
//     read a file only it may read and show it. Its second link and its
//     owner give it away;
//   - a FIFO or a device: opened with O_NONBLOCK|O_NOCTTY, so a FIFO no
//     one writes cannot hang the daemon in open or read, and refused;
//   - a directory, or a symbolic link (on the way or at the end: ELOOP,
//     refused too).
//
// The open is O_RDONLY|O_NONBLOCK; reads of a regular file are not
// affected by O_NONBLOCK. The caller bounds what it reads. A refused file
// is an *os.PathError wrapping a *RefusedError.
func OpenRegular(root, name string, owner int) (*os.File, error) {
	f, err := OpenFile(root, name, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, pathErr("open", root, name, &RefusedError{Reason: "a symbolic link", Err: unix.ELOOP})
	}
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, pathErr("fstat", root, name, err)
	}
	if why := refusal(&st, owner); why != "" {
		f.Close()
		return nil, pathErr("open", root, name, &RefusedError{Reason: why})
	}
	return f, nil
}

// refusal is why st is not a file OpenRegular hands out; "" when it is.
func refusal(st *unix.Stat_t, owner int) string {
	switch t := st.Mode & unix.S_IFMT; {
	case t == unix.S_IFIFO:
		return "not a regular file (a FIFO)"
	case t == unix.S_IFDIR:
		return "not a regular file (a directory)"
	case t == unix.S_IFCHR || t == unix.S_IFBLK:
		return "not a regular file (a device)"
	case t == unix.S_IFSOCK:
		return "not a regular file (a socket)"
	case t != unix.S_IFREG:
		return fmt.Sprintf("not a regular file (mode %#o)", t)
	case st.Nlink != 1:
		return fmt.Sprintf("hard link (%d links)", st.Nlink)
	case owner >= 0 && int64(st.Uid) != int64(owner):
		return fmt.Sprintf("owned by uid %d, not the run's uid %d", st.Uid, owner)
	}
	return ""
}
