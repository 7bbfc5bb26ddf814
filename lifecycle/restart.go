package lifecycle

import "time"

// RestartGrace is how long after Redis (re)started a free run lock is not
// yet proof that no run holds the ticket. A restart (Redis emptied, rolled
// back to an older snapshot, or an AOF that lost its last second) loses
// heartbeats at once, while each run goes on until it next looks: its run
// guard reads the run lock every guardCheck and SIGKILLs the pipeline once
// the lock is not its own (0: no guard); the executor's renewal, every
// renew, does the same without a guard. Two periods cover a look that
// fails on the connection the restart broke; the added second covers the
// kill and the scheduling around it.
//
// The executor takes no run, and the StaleJobDetector reverts nothing,
// until Redis has been up this long (runstate.TakeArgs, StaleJobDetector's
// RestartGrace): so a request restored by a rolled-back queue, or
// re-pushed after a wipe, never starts beside the run it belongs to. A run
// cut off from Redis across the restart is not covered: it stops when its
// trust window ends, as it would without the restart.
func RestartGrace(renew, guardCheck time.Duration) time.Duration {
	bound := 2 * renew
	if guardCheck > 0 {
		bound = min(bound, 2*guardCheck)
	}
	return bound + time.Second
}
