package nofollow

import (
	"errors"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

var (
	// noOpenat2 is set once the kernel answers ENOSYS: later calls go
	// straight to the component walk.
	noOpenat2 atomic.Bool
	// forceWalk makes every open take the component walk (tests).
	forceWalk atomic.Bool
)

// openat2Retries bounds the retries of an openat2 that a concurrent rename
// made give up (EAGAIN); the walk, as safe, takes over after them.
const openat2Retries = 8

// openat2 opens name beneath dirfd with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS:
// the kernel refuses any link on the way (ELOOP) and any step above dirfd
// (EXDEV). errNoOpenat2 when the kernel does not have the call.
func openat2(dirfd int, name string, flag int, perm uint32) (int, error) {
	if forceWalk.Load() || noOpenat2.Load() {
		return -1, errNoOpenat2
	}
	how := unix.OpenHow{
		Flags:   uint64(flag | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	if flag&(unix.O_CREAT|unix.O_TMPFILE) != 0 {
		how.Mode = uint64(perm)
	}
	for range openat2Retries {
		fd, err := unix.Openat2(dirfd, name, &how)
		switch {
		case errors.Is(err, unix.ENOSYS):
			noOpenat2.Store(true)
			return -1, errNoOpenat2
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
			continue
		}
		return fd, err
	}
	return -1, errNoOpenat2
}
