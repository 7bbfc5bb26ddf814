// Package wallclock is the daemon's wall clock: time.Now, shifted by the
// AGENTSMITHD_CLOCK_SKEW environment variable when it is set (a Go
// duration: "2m", "-90s"). The chaos run sets it to give one replica a
// clock minutes ahead and another one behind; Go reads the clock through
// the vDSO, not libc, so libfaketime cannot do that to a Go process.
//
// The shift is added with time.Time.Add, which moves the monotonic reading
// too: durations between two readings (leases, heartbeats, timeouts) are
// unchanged, only the wall time written to Redis and compared across
// replicas is off, as on a machine whose clock is wrong.
package wallclock

import (
	"os"
	"sync"
	"time"
)

// Env names the variable Now reads once.
const Env = "AGENTSMITHD_CLOCK_SKEW"

// maxSkew bounds the shift: a typo must not move the clock by years.
const maxSkew = 24 * time.Hour

var skew = sync.OnceValue(func() time.Duration { return Parse(os.Getenv(Env)) })

// Parse reads a skew: "" or anything unparsable or beyond a day is 0.
func Parse(v string) time.Duration {
	d, err := time.ParseDuration(v)
	if err != nil || d > maxSkew || d < -maxSkew {
		return 0
	}
	return d
}

// Now is time.Now shifted by the configured skew (none by default).
func Now() time.Time { return time.Now().Add(skew()) }

// Skew is the configured shift, for the log line at start-up.
func Skew() time.Duration { return skew() }
