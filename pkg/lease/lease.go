// Package lease owns leader leases: one Redis key per role (the poller, the
// housekeeping services) that at most one replica holds at a time, so the
// singleton jobs of the fleet run exactly once.
//
// A lease is a redislock key whose value is "instance/term-token". The
// holder renews it by compare-and-set and, like riverqueue's elector, also
// keeps a local validity deadline shorter than the TTL, measured from the
// START of its last successful acquire or renew call. The key cannot expire
// before that point, so a holder that stops hearing from Redis (a network
// partition, a stalled process, a hung call) stops acting as leader before
// any other replica can take the lease over.
package lease

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/pkg/trust"
	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
)

// Defaults for zero Config fields.
const (
	// DefaultTTL is the lease key's TTL.
	DefaultTTL = 15 * time.Second
	// DefaultTrust is the fraction of the TTL a holder trusts its lease
	// for. The rest is the margin for clock drift and for the delay
	// between sending a command and Redis applying it (see pkg/trust).
	DefaultTrust = trust.DefaultLeaseTrust
	// releaseTimeout bounds the release at the end of a term when the
	// caller's context is already done.
	releaseTimeout = 5 * time.Second
)

// Config configures a Lease. Zero values are replaced by the defaults.
type Config struct {
	Key        string        // e.g. keys.Leader(keys.LeaderPoller); required
	Instance   string        // holder identity; the stored value is Instance+"/"+random term token; required
	TTL        time.Duration // default DefaultTTL
	RenewEvery time.Duration // default TTL/3
	RetryEvery time.Duration // how often a non-holder tries to acquire; default TTL/3
	// Trust is the fraction of TTL the holder trusts its lease after the
	// START of its last successful acquire/renew call; default DefaultTrust.
	// It must be in (0, 1).
	Trust float64
	Clock func() time.Time // default time.Now; Valid and the validity deadline read it
	// Logger is the caller's logger, which names the instance (the
	// daemon's carries "instance"); the lease adds only its key. Default
	// zap.NewNop().
	Logger *zap.Logger
}

// Lease is one replica's handle on one leader lease. Its methods are safe
// for concurrent use; Run is the usual way to use it.
type Lease struct {
	rdb redis.UniversalClient
	cfg Config
	log *zap.Logger

	window trust.Window

	mu         sync.Mutex
	value      string    // "instance/token" of the current term; "" when not held
	validUntil time.Time // local validity deadline of the current term
}

// New returns a Lease for cfg. It panics if Key or Instance is empty, if
// Instance contains "/", or if a duration is negative or Trust is outside
// (0, 1): those are programming errors, not runtime conditions.
func New(rdb redis.UniversalClient, cfg Config) *Lease {
	switch {
	case cfg.Key == "":
		panic("lease: Config.Key is required")
	case cfg.Instance == "" || strings.Contains(cfg.Instance, "/"):
		panic(fmt.Sprintf("lease: Config.Instance %q must be non-empty and contain no '/'", cfg.Instance))
	case cfg.TTL < 0 || cfg.RenewEvery < 0 || cfg.RetryEvery < 0:
		panic("lease: negative duration in Config")
	case cfg.Trust < 0 || cfg.Trust >= 1:
		panic(fmt.Sprintf("lease: Config.Trust %v must be in (0, 1)", cfg.Trust))
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.RenewEvery == 0 {
		cfg.RenewEvery = cfg.TTL / 3
	}
	if cfg.RetryEvery == 0 {
		cfg.RetryEvery = cfg.TTL / 3
	}
	if cfg.Trust == 0 {
		cfg.Trust = DefaultTrust
	}
	if cfg.Clock == nil {
		cfg.Clock = wallclock.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &Lease{
		rdb:    rdb,
		cfg:    cfg,
		window: trust.Fraction(cfg.TTL, cfg.Trust),
		log:    cfg.Logger.With(zap.String("lease", cfg.Key)),
	}
}

// TryAcquire starts a new term if the lease is free and reports whether this
// Lease holds it after the call. If it already holds a term, it renews that
// term instead.
func (l *Lease) TryAcquire(ctx context.Context) (bool, error) {
	if l.held() {
		return l.Renew(ctx)
	}
	value := l.cfg.Instance + "/" + redislock.NewToken()
	start := l.cfg.Clock()
	ok, err := redislock.Acquire(ctx, l.rdb, l.cfg.Key, value, l.cfg.TTL)
	if err != nil {
		return false, fmt.Errorf("lease: %w", err)
	}
	if !ok {
		return false, nil
	}
	l.mu.Lock()
	l.value, l.validUntil = value, l.deadline(start)
	l.mu.Unlock()
	return true, nil
}

// Renew extends the current term and reports whether it still holds. false
// (lease lost, or none held) ends the term: Valid is false from then on. An
// error leaves the term as it was, so the validity deadline keeps running
// down while the caller retries.
func (l *Lease) Renew(ctx context.Context) (bool, error) {
	l.mu.Lock()
	value := l.value
	l.mu.Unlock()
	if value == "" {
		return false, nil
	}
	start := l.cfg.Clock()
	ok, err := redislock.Renew(ctx, l.rdb, l.cfg.Key, value, l.cfg.TTL)
	if err != nil {
		return false, fmt.Errorf("lease: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.value != value { // released meanwhile
		return false, nil
	}
	if !ok {
		l.value, l.validUntil = "", time.Time{}
		return false, nil
	}
	l.validUntil = l.deadline(start)
	return true, nil
}

// Release ends the current term and deletes the key if it still holds this
// term's value, so another replica can take over without waiting for the
// TTL. Valid is false as soon as Release is called, even if the delete
// fails. Releasing when not holding is a no-op.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	value := l.value
	l.value, l.validUntil = "", time.Time{}
	l.mu.Unlock()
	if value == "" {
		return nil
	}
	if _, err := redislock.Release(ctx, l.rdb, l.cfg.Key, value); err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	return nil
}

// Valid reports whether this Lease may act as leader now: it holds a term
// and now is before the start of its last successful acquire/renew plus
// Trust*TTL.
func (l *Lease) Valid() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.value != "" && l.cfg.Clock().Before(l.validUntil)
}

// Holder returns the instance that holds the lease in Redis, or "" if none.
func (l *Lease) Holder(ctx context.Context) (string, error) {
	value, _, err := redislock.Holder(ctx, l.rdb, l.cfg.Key)
	if err != nil {
		return "", fmt.Errorf("lease: %w", err)
	}
	if i := strings.LastIndex(value, "/"); i >= 0 {
		return value[:i], nil
	}
	return value, nil
}

// held reports whether a term is current (valid or not).
func (l *Lease) held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.value != ""
}

// deadline is the local validity deadline for a call that started at start.
func (l *Lease) deadline(start time.Time) time.Time { return l.window.Until(start) }

// remaining is the time left until the validity deadline (<= 0 if passed or
// not held).
func (l *Lease) remaining() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.value == "" {
		return 0
	}
	return l.validUntil.Sub(l.cfg.Clock())
}

// releaseCtx returns a context for the release at the end of a term: ctx
// itself while it is live, else a short detached one, so shutdown still
// hands the lease over at once.
func releaseCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Err() == nil {
		return context.WithTimeout(ctx, releaseTimeout)
	}
	return context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
}
