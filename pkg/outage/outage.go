// Package outage turns a dependency that stays unreachable (Redis, a
// tracker, a refused token) into three kinds of log lines: one when the
// outage starts (what, where, what the daemon does meanwhile), a reminder
// at a slow interval while it lasts, and one when it ends, with its
// duration. The loops that meet the failure keep retrying as they do; their
// own error lines for the same cause are folded to debug (Fold), so an
// outage of a minute is a handful of lines instead of hundreds.
package outage

import (
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
)

// DefaultReminder is how often a lasting outage is logged again.
const DefaultReminder = 5 * time.Minute

// Config describes one dependency.
type Config struct {
	// What is the dependency ("redis", "tracker", "token"); Where names the
	// instance (the Redis addresses, the tracker host, the token's setting
	// name: never a secret).
	What, Where string
	// Meanwhile says what the daemon does while it lasts, in words an
	// operator reads in the start line.
	Meanwhile string
	// Failing and Again name the two states in the lines ("unreachable"
	// and "reachable again" if empty; a token is "refused" and "accepted
	// again").
	Failing, Again string
	// Fields are added to every line (the project and platform of a
	// tracker).
	Fields []zap.Field
	// Reminder is the interval between reminders (DefaultReminder if 0).
	Reminder time.Duration
	// Now is the clock (wallclock.Now if nil); tests inject one they advance.
	Now func() time.Time
	// Log receives the lines (a no-op logger if nil). It must not be a
	// logger folded by this tracker: the start line carries the error.
	Log *zap.Logger
}

// Tracker follows one dependency. Fail and OK may be called from any
// goroutine, as often as the callers meet the dependency.
type Tracker struct {
	cfg Config

	mu       sync.Mutex
	down     bool
	since    time.Time // start of the current outage
	reported time.Time // last start or reminder line
	failures int       // Fail calls in the current outage
	lastFail time.Time
}

// New builds a tracker for cfg.
func New(cfg Config) *Tracker {
	if cfg.Reminder <= 0 {
		cfg.Reminder = DefaultReminder
	}
	if cfg.Now == nil {
		cfg.Now = wallclock.Now
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if cfg.Failing == "" {
		cfg.Failing = "unreachable"
	}
	if cfg.Again == "" {
		cfg.Again = "reachable again"
	}
	return &Tracker{cfg: cfg}
}

// Fail records that the dependency failed with err. The first failure
// starts an outage and logs it; a failure a Reminder or more after the last
// line logs a reminder. It reports whether an outage was already under way
// (the caller's own line is then redundant).
func (t *Tracker) Fail(err error) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.cfg.Now()
	t.lastFail = now
	if !t.down {
		t.down, t.since, t.reported, t.failures = true, now, now, 1
		t.cfg.Log.Warn(t.cfg.What+" "+t.cfg.Failing+"; "+t.cfg.Meanwhile, t.fields(zap.Error(err),
			zap.Duration("remindEvery", t.cfg.Reminder))...)
		return false
	}
	t.failures++
	if now.Sub(t.reported) >= t.cfg.Reminder {
		t.reported = now
		t.cfg.Log.Warn(t.cfg.What+" still "+t.cfg.Failing+"; "+t.cfg.Meanwhile, t.fields(zap.Error(err),
			zap.Duration("for", now.Sub(t.since).Round(time.Second)), zap.Int("failures", t.failures))...)
	}
	return true
}

// OK records that the dependency answered; it ends an outage under way and
// logs how long it lasted.
func (t *Tracker) OK() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.down {
		return
	}
	t.down = false
	now := t.cfg.Now()
	t.cfg.Log.Info(t.cfg.What+" "+t.cfg.Again, t.fields(
		zap.Duration("lasted", now.Sub(t.since).Round(time.Second)), zap.Int("failures", t.failures))...)
}

// fields is what every line of t carries, then more.
func (t *Tracker) fields(more ...zap.Field) []zap.Field {
	out := append([]zap.Field{zap.String("outage", t.cfg.What), zap.String("where", t.cfg.Where)}, t.cfg.Fields...)
	return append(out, more...)
}

// Down reports whether an outage is under way.
func (t *Tracker) Down() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.down
}

// LastFail is the clock's reading at the last Fail (zero if none): a test
// that advances the clock waits on it to know a failure was seen after.
func (t *Tracker) LastFail() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastFail
}
