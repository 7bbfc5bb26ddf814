// Package runcg puts each pipeline run in a cgroup v2 of its own, so that
// every process the run started ends with it: a process can leave its
// process group and session (setsid, a double fork), and be re-parented to
// init, but it cannot leave its cgroup without write access to another
// one, and writing "1" to the run cgroup's cgroup.kill (Linux 5.14)
// SIGKILLs every process in it in one step, with no pid to reuse.
//
// The daemon creates run cgroups below its own cgroup, which must be on a
// writable cgroup2 mount and delegated to the daemon's user (systemd:
// Delegate=yes). Detect says whether that holds; where it does not, the
// caller falls back to its process group and the run guard's subreaper.
// New's cgroups have no controllers: they only collect and kill processes.
//
// NewLimited's also bound the run's memory, process count and CPU
// (Limits). On cgroup v2 that takes the memory, pids and cpu controllers
// enabled for the daemon's cgroup's children, which the "no internal
// processes" rule allows only once the daemon has moved itself to a leaf
// cgroup of its own (EnableLimits). Hybrid hosts keep those controllers
// on cgroup v1 hierarchies: there the run gets a cgroup of the same name
// in each, which its first process joins by pid (Group.Join), as clone3
// puts a process in its cgroup v2 only; v1 has no cgroup.kill, so its
// members are killed one by one, frozen first where the freezer is.
// LimitHit says afterwards which limit ended part of the run.
package runcg

import (
	"errors"
	"time"
)

// ErrUnsupported is returned by Detect where cgroup v2 cannot be used at
// all (another OS, no cgroup2 mount).
var ErrUnsupported = errors.New("cgroup v2 not available")

// emptyTimeout bounds how long Group.Close waits for a killed cgroup to
// empty; SIGKILL is not catchable, so only a process stuck in the kernel
// (uninterruptible I/O) takes this long.
const emptyTimeout = 10 * time.Second
