package runcg

import (
	"errors"
	"fmt"
	"math"
)

// Limits bound one run's resources. Zero means unlimited, for each field.
type Limits struct {
	// MemoryBytes caps the run's memory (anonymous, page cache, kernel),
	// swap included where the kernel accounts it: the OOM killer ends a
	// process of the run when it is reached.
	MemoryBytes int64
	// Pids caps how many processes and threads the run has at once: a
	// fork or clone beyond it fails with EAGAIN.
	Pids int64
	// CPU caps the run's CPU time in cores (2.0 is two cores' worth per
	// period): the run is throttled, never killed, above it.
	CPU float64
}

// IsZero reports whether l limits nothing.
func (l Limits) IsZero() bool { return l.MemoryBytes == 0 && l.Pids == 0 && l.CPU == 0 }

// Validate rejects negative and non-finite limits, and CPU below the
// kernel's smallest quota (1 ms per 100 ms period: 0.01 cores).
func (l Limits) Validate() error {
	switch {
	case l.MemoryBytes < 0:
		return fmt.Errorf("memory limit %d is negative", l.MemoryBytes)
	case l.Pids < 0:
		return fmt.Errorf("process limit %d is negative", l.Pids)
	case l.CPU < 0 || math.IsNaN(l.CPU) || math.IsInf(l.CPU, 0):
		return fmt.Errorf("CPU limit %v is not a non-negative number", l.CPU)
	case l.CPU > 0 && cpuQuota(l.CPU) < minQuota:
		return fmt.Errorf("CPU limit %v is below %v cores", l.CPU, float64(minQuota)/cpuPeriod)
	}
	return nil
}

// cpuPeriod is the CFS period run cgroups are given, in microseconds: the
// kernel's default, so quota/period reads as cores.
const cpuPeriod = 100000

// minQuota is the kernel's smallest CFS quota, in microseconds.
const minQuota = 1000

// cpuQuota is the CFS quota, in microseconds per cpuPeriod, of cores.
func cpuQuota(cores float64) int64 { return int64(math.Round(cores * cpuPeriod)) }

// ErrNoController is returned by NewLimited for a limit no cgroup
// controller available to the daemon can enforce.
var ErrNoController = errors.New("no cgroup controller for the limit")

// Fix says what gives the daemon the controllers it lacks; the daemon's
// check command prints it next to the missing ones.
const Fix = "give the daemon a delegated cgroup v2 with memory, pids and cpu (systemd Delegate=yes), " +
	"or writable cgroup v1 memory, pids and cpu hierarchies"

// units, largest first, binary before decimal: a size is said in the
// first that divides it exactly, which is the unit the config wrote it in
// (config.ParseBytes reads both kinds): 4GiB is "4 GiB", 4GB "4 GB".
var units = []struct {
	name string
	n    int64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KiB", 1 << 10}, {"KB", 1e3}}

// FormatBytes says n in the largest unit that holds it exactly, as a
// config would write it: 4 GiB, 1536 MiB, 4 GB, 100 B.
func FormatBytes(n int64) string {
	for _, u := range units {
		if n != 0 && n%u.n == 0 {
			return fmt.Sprintf("%d %s", n/u.n, u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}
