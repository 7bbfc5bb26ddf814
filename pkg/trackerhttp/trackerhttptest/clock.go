// Package trackerhttptest holds what tests of tracker clients need to drive
// trackerhttp's rate-limit waits without waiting: a fake clock whose Sleep
// advances it and remembers every wait.
package trackerhttptest

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
)

// Clock is a fake time source. Sleep returns at once, moving the time on by
// the duration slept, so a test sees exactly what the transport waited.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

// NewClock starts a clock at start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep records d and advances the clock by it, or fails with ctx's error.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(max(d, 0))
	return nil
}

// Advance moves the clock on without recording a sleep (time passing
// between calls).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Sleeps lists every wait so far.
func (c *Clock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sleeps)
}

// Client is the client a platform builds by default (trackerhttp's, with
// its ClientTimeout), with limits and this clock injected.
func (c *Clock) Client(limits trackerhttp.RateLimits) *http.Client {
	return trackerhttp.NewClientWith(trackerhttp.Options{Clock: c.Now, Sleep: c.Sleep, RateLimits: limits})
}
