package runcg

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
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

// binary units, largest first: sizes are said in the largest one that
// divides them exactly, the way a config would write them.
var units = []struct {
	name  string
	shift uint
}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}}

// FormatBytes says n in the largest binary unit that holds it exactly:
// 4 GiB, 1536 MiB, 100 B.
func FormatBytes(n int64) string {
	for _, u := range units {
		if n != 0 && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// ParseBytes reads a size in binary units: "4GiB", "512 MiB", "64KiB",
// "1048576" (bytes); K, M, G and T are read as KiB, MiB, GiB and TiB, as
// systemd's MemoryMax= does. Decimal units (GB, MB) are refused rather
// than guessed: a memory limit that is 7% off is a wrong limit.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return r < '0' || r > '9' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	if num == "" {
		return 0, fmt.Errorf("size %q: no number", s)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	var shift uint
	switch strings.ToLower(unit) {
	case "", "b":
	case "k", "kib":
		shift = 10
	case "m", "mib":
		shift = 20
	case "g", "gib":
		shift = 30
	case "t", "tib":
		shift = 40
	default:
		return 0, fmt.Errorf("size %q: unit %q is not one of B, KiB, MiB, GiB, TiB", s, unit)
	}
	if n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return n << shift, nil
}
