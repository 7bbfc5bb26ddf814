//go:build unix

package nofollow

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// afterList, when set (tests), runs after a directory's entries are read
// and before any of them is chowned: the window a pipeline racing the walk
// has to swap an entry.
var afterList func(dir string)

// ChownTree gives dir and everything beneath it to uid:gid without
// following a link: a link is chowned itself, a directory is entered only
// through a descriptor opened with O_NOFOLLOW relative to its parent's, and
// every entry is chowned relative to its directory's descriptor, never by
// its path. A directory swapped for a link while the walk runs is refused
// (ELOOP) and the link chowned instead; a directory moved elsewhere keeps
// being walked through its descriptor, so only what was in the tree is
// chowned. A file with more than one name (a hard link) is left as it is:
// its other name may be a file outside the tree.
//
// dir itself must not be a link; its parent directories are trusted.
func ChownTree(dir string, uid, gid int) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	if err := unix.Fchown(fd, uid, gid); err != nil {
		unix.Close(fd)
		return &os.PathError{Op: "chown", Path: dir, Err: err}
	}
	return chownBelow(fd, dir, uid, gid)
}

// Chown gives the directory dir alone to uid:gid, refusing a link.
func Chown(dir string, uid, gid int) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Fchown(fd, uid, gid); err != nil {
		return &os.PathError{Op: "chown", Path: dir, Err: err}
	}
	return nil
}

// chownBelow chowns the entries of the directory open as fd (path only
// names it in errors) and closes fd.
func chownBelow(fd int, path string, uid, gid int) error {
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if afterList != nil {
		afterList(path)
	}
	for _, e := range entries {
		name, p := e.Name(), filepath.Join(path, e.Name())
		if e.IsDir() {
			sub, err := openDirAt(fd, name)
			switch {
			case err == nil:
				if err := unix.Fchown(sub, uid, gid); err != nil {
					unix.Close(sub)
					return &os.PathError{Op: "chown", Path: p, Err: err}
				}
				if err := chownBelow(sub, p, uid, gid); err != nil {
					return err
				}
				continue
			case errors.Is(err, unix.ENOENT):
				continue
			case !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR):
				return &os.PathError{Op: "open", Path: p, Err: err}
			}
			// No longer a directory: chowned below as what it is now.
		}
		if err := chownEntry(fd, name, uid, gid); err != nil && !errors.Is(err, unix.ENOENT) {
			return &os.PathError{Op: "chown", Path: p, Err: err}
		}
	}
	return nil
}
