// Package housekeeping repairs what crashes and Redis loss leave behind. It
// runs only on the replica holding agentsmith:leader:housekeeping. Two
// speeds: a fast cycle from Redis alone (in-flight index, instance liveness
// keys, processing lists) finds a dead consumer in seconds; a slow cycle
// reads the trackers, whose labels are the truth, with one list call per
// project and state, so it also repairs after Redis lost everything.
package housekeeping

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// Specification-derived defaults.
const (
	// DefaultFastInterval: how often Redis-only checks run.
	DefaultFastInterval = 5 * time.Second
	// DefaultSlowInterval: how often the trackers are listed. The
	// specification allows 10 minutes for Enqueued recovery; a minute keeps
	// API use at one list call per project and state per minute.
	DefaultSlowInterval = 60 * time.Second
)

// loop runs fast every fastEvery and slow every slowEvery, and kicked at once
// when kicked, until ctx is done. Errors are logged; a cycle that fails is simply
// tried again on the next tick, so an unreachable Redis or tracker never
// stops the loop.
func loop(ctx context.Context, log *zap.Logger, fastEvery, slowEvery time.Duration, kick <-chan struct{},
	fast, slow, kicked func(context.Context) error) error {
	fastT := time.NewTicker(fastEvery)
	defer fastT.Stop()
	slowT := time.NewTicker(slowEvery)
	defer slowT.Stop()
	run := func(name string, f func(context.Context) error) {
		if f == nil {
			return
		}
		if err := f(ctx); err != nil && ctx.Err() == nil {
			log.Warn("housekeeping cycle failed", zap.String("cycle", name), zap.Error(err))
		}
	}
	run("fast", fast)
	run("slow", slow)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-fastT.C:
			run("fast", fast)
		case <-slowT.C:
			run("slow", slow)
		case <-kick:
			run("slow", kicked)
			slowT.Reset(slowEvery)
		}
	}
}

func kickChan() chan struct{} { return make(chan struct{}, 1) }

func kickNow(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// noFence is the Fence of a service run outside a lease (tests, tools).
func noFence(context.Context) error { return nil }
