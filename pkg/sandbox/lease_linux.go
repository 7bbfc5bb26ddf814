package sandbox

import (
	"errors"
	"fmt"
	"hash/fnv"
	"sync"

	"golang.org/x/sys/unix"
)

// Range is a range of host uids (and the gids of the same numbers) that
// runs are mapped to, one per concurrent run.
type Range struct{ First, Count uint32 }

// DefaultRange starts at 0x70000000, which systemd's "Users, Groups,
// UIDs and GIDs on systemd Systems" leaves unassigned (above the
// container range, below the 0x80000000 signed boundary), and holds
// 65536 uids.
var DefaultRange = Range{First: 0x70000000, Count: 65536}

// leasePrefix names a lease's abstract unix socket: the kernel releases
// the name when the last fd of the socket is closed, by Release or by
// the holder's death, so a crashed daemon leaks nothing.
const leasePrefix = "@agentsmithd/sandbox-uid/"

// Lease is a host uid held for one run.
type Lease struct {
	uid  uint32
	mu   sync.Mutex
	fd   int
	done bool
}

// UID is the leased uid (and gid).
func (l *Lease) UID() uint32 { return l.uid }

// Release gives the uid back. The run's processes must be gone: the next
// lease of the uid runs another ticket as it.
func (l *Lease) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return nil
	}
	l.done = true
	return unix.Close(l.fd)
}

// LeaseUID leases a uid of r not leased by any process in this network
// namespace, host-wide across daemons. It starts at a point hashed from
// hint (the ticket id: a ticket usually gets the same uid, so files it
// left in a kept work tree stay its own) and probes upward, wrapping. The
// lease is an abstract unix socket bound to "agentsmithd/sandbox-uid/<uid>",
// close-on-exec, so only this process holds it.
func LeaseUID(r Range, hint string) (*Lease, error) {
	if r.Count == 0 || uint64(r.First)+uint64(r.Count) > 1<<32-1 || r.First == 0 {
		return nil, fmt.Errorf("sandbox: uid range %d+%d is empty, includes 0 or overflows", r.First, r.Count)
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(hint))
	start := h.Sum32() % r.Count
	for i := uint32(0); i < r.Count; i++ {
		uid := r.First + (start+i)%r.Count
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("sandbox: lease uid: %w", err)
		}
		err = unix.Bind(fd, &unix.SockaddrUnix{Name: fmt.Sprintf("%s%d", leasePrefix, uid)})
		if err == nil {
			return &Lease{uid: uid, fd: fd}, nil
		}
		_ = unix.Close(fd)
		if !errors.Is(err, unix.EADDRINUSE) {
			return nil, fmt.Errorf("sandbox: lease uid %d: %w", uid, err)
		}
	}
	return nil, fmt.Errorf("sandbox: every uid of %d+%d is leased", r.First, r.Count)
}
