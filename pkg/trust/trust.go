// Package trust answers "how long may I still act?" for the holder of a
// Redis key with a TTL: a leader lease (pkg/lease), a replica's liveness key
// (pkg/presence), a run's heartbeat (lifecycle's executor), a claim lock
// (lifecycle's claim service). Other replicas
// take over once the key is gone, so the holder must stop acting before
// that can happen, from its own clock, without asking Redis.
//
// All three use the one rule here: the holder trusts its key for a fraction
// of the TTL counted from the START of the call that set or renewed it. The
// key cannot expire before start + TTL (Redis applied the TTL after the call
// was sent), so the rest of the TTL is the margin that absorbs the
// difference between the two clocks' rates and a pause between the local
// clock read and Redis applying the command.
//
// The fractions differ, and why is written next to each: a lease or a
// presence lapse only pauses work that resumes within seconds, so they keep
// a wide margin (DefaultLeaseTrust, DefaultPresenceTrust: 40 % of a 15 s
// TTL, 6 s); a heartbeat lapse kills a running pipeline and costs the
// ticket an attempt, and its TTL is long (2 min), so the same seconds of
// margin are a small fraction of it (DefaultHeartbeatTrust: 10 %, 12 s).
package trust

import (
	"fmt"
	"time"
)

// Default fractions of the TTL a holder trusts its key for.
const (
	// DefaultLeaseTrust is a leader lease's: at the default 15 s TTL, 9 s
	// trusted after each renewal, which comes every 5 s.
	DefaultLeaseTrust = 0.6
	// DefaultPresenceTrust is a replica liveness key's: at the default 15 s
	// TTL, 9 s trusted after each renewal, which comes every 3.75 s.
	DefaultPresenceTrust = 0.6
	// DefaultHeartbeatTrust is a run heartbeat's (the specification's TTL
	// minus 10 %): at 2 min, 108 s trusted after each renewal, which comes
	// every 30 s, so three renewals in a row may fail before the pipeline
	// is stopped.
	DefaultHeartbeatTrust = 0.9
	// DefaultClaimLockTrust is a claim lock's: at the default 30 s TTL, a
	// claim writes its Enqueued label within 18 s of asking for the lock,
	// or not at all; the lock is never renewed, and a claim takes a read
	// and a write.
	DefaultClaimLockTrust = 0.6
)

// Window is the part of a key's TTL its holder trusts.
type Window struct {
	TTL     time.Duration
	Trusted time.Duration // < TTL
}

// Fraction is the window trusting f of ttl; f must be in (0, 1).
func Fraction(ttl time.Duration, f float64) Window {
	if f <= 0 || f >= 1 {
		panic(fmt.Sprintf("trust: fraction %v must be in (0, 1)", f))
	}
	return Window{TTL: ttl, Trusted: time.Duration(f * float64(ttl))}
}

// Until is when the holder stops trusting a key set or renewed by a call
// that started at start.
func (w Window) Until(start time.Time) time.Time { return start.Add(w.Trusted) }
