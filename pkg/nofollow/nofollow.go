//go:build unix

// Package nofollow opens, creates, removes and chowns files beneath a
// directory without following any symbolic link on the way. The trees it
// serves are ones a pipeline can write (its work dir): a link planted there
// must not make the daemon, which may run as root, read, write, truncate or
// chown a file elsewhere.
//
// The directory given as root is trusted and opened as named (the
// operator's or the daemon's own path). Every name beneath it is resolved
// relative to the file descriptor of the directory above it, never again by
// a full path, so a component swapped for a link after it was looked at is
// refused, not followed. On Linux an open is one openat2 call with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS; where the kernel lacks openat2
// (ENOSYS: before 5.6, or a seccomp filter), and on other systems, each
// component is opened with O_NOFOLLOW. A link met anywhere fails the call
// with ELOOP (or ENOTDIR), whichever way it was resolved.
package nofollow

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrEscape is returned for a name that is absolute or has a ".."
// component: nothing here reaches above root.
var ErrEscape = errors.New("name is not beneath its root")

// OpenFile opens name beneath root as os.OpenFile would, with flag and perm
// (perm only with O_CREATE), refusing every symbolic link on the way and at
// the end. name is slash-separated and relative to root; "" or "." is root
// itself.
func OpenFile(root, name string, flag int, perm os.FileMode) (*os.File, error) {
	parts, err := split(name)
	if err != nil {
		return nil, pathErr("open", root, name, err)
	}
	rfd, err := openRoot(root)
	if err != nil {
		return nil, err
	}
	defer unix.Close(rfd)
	fd, err := openBeneath(rfd, parts, flag, uint32(perm.Perm()))
	if err != nil {
		return nil, pathErr("open", root, name, err)
	}
	return os.NewFile(uintptr(fd), filepath.Join(root, name)), nil
}

// Open opens name beneath root for reading; see OpenFile.
func Open(root, name string) (*os.File, error) { return OpenFile(root, name, os.O_RDONLY, 0) }

// MkdirAll creates name beneath root and every missing directory above it
// with perm (before the umask), refusing a link in place of any of them. An
// existing directory is left as it is.
func MkdirAll(root, name string, perm os.FileMode) error {
	parts, err := split(name)
	if err != nil {
		return pathErr("mkdir", root, name, err)
	}
	fd, err := openRoot(root)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if err := unix.Mkdirat(fd, p, uint32(perm.Perm())); err != nil && !errors.Is(err, unix.EEXIST) {
			unix.Close(fd)
			return pathErr("mkdir", root, name, err)
		}
		next, err := openDirAt(fd, p)
		unix.Close(fd)
		if err != nil {
			return pathErr("mkdir", root, name, err)
		}
		fd = next
	}
	return unix.Close(fd)
}

// Remove removes the file, link or empty directory name beneath root. A
// link is removed itself, never its target, and no link above it is
// followed. A name that does not exist is an error satisfying
// errors.Is(err, fs.ErrNotExist).
func Remove(root, name string) error {
	parts, err := split(name)
	if err != nil || len(parts) == 0 {
		return pathErr("remove", root, name, cmpErr(err, ErrEscape))
	}
	rfd, err := openRoot(root)
	if err != nil {
		return err
	}
	defer unix.Close(rfd)
	dir, err := openBeneath(rfd, parts[:len(parts)-1], unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return pathErr("remove", root, name, err)
	}
	defer unix.Close(dir)
	last := parts[len(parts)-1]
	err = unix.Unlinkat(dir, last, 0)
	if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
		// Linux says EISDIR for a directory, other systems EPERM.
		if rerr := unix.Unlinkat(dir, last, unix.AT_REMOVEDIR); rerr == nil || !errors.Is(rerr, unix.ENOTDIR) {
			err = rerr
		}
	}
	if err != nil {
		return pathErr("remove", root, name, err)
	}
	return nil
}

// split is name's components, "" and "." dropped; an absolute name or a
// ".." is ErrEscape.
func split(name string) ([]string, error) {
	if strings.HasPrefix(name, "/") {
		return nil, ErrEscape
	}
	var parts []string
	for _, p := range strings.Split(name, "/") {
		switch p {
		case "", ".":
		case "..":
			return nil, ErrEscape
		default:
			parts = append(parts, p)
		}
	}
	return parts, nil
}

// openRoot opens the trusted root directory, following links in its own
// path as any configured path is.
func openRoot(root string) (int, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: root, Err: err}
	}
	return fd, nil
}

// openBeneath opens parts beneath the directory dirfd without following a
// link: openat2 where the kernel has it, else one component at a time.
func openBeneath(dirfd int, parts []string, flag int, perm uint32) (int, error) {
	name := strings.Join(parts, "/")
	if name == "" {
		name = "."
	}
	if fd, err := openat2(dirfd, name, flag, perm); !errors.Is(err, errNoOpenat2) {
		return fd, err
	}
	return walkOpen(dirfd, parts, flag, perm)
}

// walkOpen opens each directory of parts with O_NOFOLLOW relative to the
// one before, and the last component with O_NOFOLLOW and flag.
func walkOpen(dirfd int, parts []string, flag int, perm uint32) (int, error) {
	if len(parts) == 0 {
		return unix.Openat(dirfd, ".", flag|unix.O_CLOEXEC, perm)
	}
	fd := dirfd
	for _, p := range parts[:len(parts)-1] {
		next, err := openDirAt(fd, p)
		if fd != dirfd {
			unix.Close(fd)
		}
		if err != nil {
			return -1, err
		}
		fd = next
	}
	out, err := unix.Openat(fd, parts[len(parts)-1], flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if fd != dirfd {
		unix.Close(fd)
	}
	return out, err
}

// openDirAt opens the directory name in dirfd, refusing a link.
func openDirAt(dirfd int, name string) (int, error) {
	return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

func pathErr(op, root, name string, err error) error {
	return &os.PathError{Op: op, Path: filepath.Join(root, name), Err: err}
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// errNoOpenat2 says the caller must resolve component by component.
var errNoOpenat2 = fmt.Errorf("openat2 unavailable")
