package main

import (
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
)

// skewEnv is the clock a replica slot runs with (pkg/wallclock): slot 1
// minutes ahead, slot 2 as far behind, slot 3 right. Leases, heartbeats
// and presence are Redis TTLs trusted on each replica's monotonic clock, so
// the skew reaches only what crosses replicas as wall time: delayed-retry
// scores, concurrency-slot scores, enqueued_at and a run's started (README
// "Where wall time is used"). The pipelines' run log is written by bash
// with the real clock, so the overlap analysis is not skewed.
func skewEnv(slot int, skew time.Duration) []string {
	if skew == 0 {
		return nil
	}
	switch slot {
	case 1:
		return []string{wallclock.Env + "=" + skew.String()}
	case 2:
		return []string{wallclock.Env + "=" + (-skew).String()}
	}
	return nil
}
