// Package presence keeps one replica's liveness key alive in Redis. Other
// replicas read the key's absence as "this replica is gone" and take over
// its work within seconds, so the replica itself must stop acting before the
// key can expire: Lost() closes once the local trust deadline passes without
// a successful renewal, well before the key's TTL runs out.
package presence

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/pkg/trust"
	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
)

// Defaults.
const (
	DefaultTTL   = 15 * time.Second
	DefaultTrust = trust.DefaultPresenceTrust // fraction of TTL a renewal is trusted for, from the start of the call (pkg/trust)
)

// Window is the trust window of a liveness key with TTL ttl (DefaultTTL
// when 0), as Presence trusts each renewal: what a process watching the
// key for this replica (a run guard) must hold it to.
func Window(ttl time.Duration) trust.Window {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return trust.Fraction(ttl, DefaultTrust)
}

// Config configures a Presence.
type Config struct {
	Key        string
	Value      string
	TTL        time.Duration // default DefaultTTL
	RenewEvery time.Duration // default TTL/4
	Clock      func() time.Time
	Logger     *zap.Logger
}

// Presence renews a liveness key and tells its owner when to stop trusting it.
type Presence struct {
	cfg Config
	rdb redis.Cmdable

	mu         sync.Mutex
	validUntil time.Time
	lost       chan struct{}
	ready      chan struct{}
	readyOnce  sync.Once
}

// New returns a Presence; call Run to keep it alive.
func New(rdb redis.Cmdable, cfg Config) *Presence {
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.RenewEvery <= 0 {
		cfg.RenewEvery = cfg.TTL / 4
	}
	if cfg.Clock == nil {
		cfg.Clock = wallclock.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	lost := make(chan struct{})
	close(lost) // not valid until the first renewal
	return &Presence{cfg: cfg, rdb: rdb, lost: lost, ready: make(chan struct{})}
}

// Valid reports whether the last renewal is still trusted.
func (p *Presence) Valid() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cfg.Clock().Before(p.validUntil)
}

// Lost returns a channel closed when the current validity lapses. Callers
// holding work under this presence stop it when the channel closes.
func (p *Presence) Lost() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lost
}

// Ready is closed after the first successful renewal.
func (p *Presence) Ready() <-chan struct{} { return p.ready }

// Run renews the key until ctx is done, then deletes it so other replicas
// see the departure at once.
func (p *Presence) Run(ctx context.Context) error {
	ticker := time.NewTicker(p.cfg.RenewEvery)
	defer ticker.Stop()
	expiry := time.NewTimer(time.Hour)
	expiry.Stop()
	defer expiry.Stop()
	for {
		p.renew(ctx, expiry)
		select {
		case <-ctx.Done():
			p.expire(true)
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if err := p.rdb.Del(dctx, p.cfg.Key).Err(); err != nil {
				p.cfg.Logger.Warn("presence: delete liveness key", zap.Error(err))
			}
			return nil
		case <-expiry.C:
			p.expire(false)
		case <-ticker.C:
			// A renewal that ran into the trust deadline leaves both
			// ready; the lapse goes first.
			select {
			case <-expiry.C:
				p.expire(false)
			default:
			}
		}
	}
}

func (p *Presence) renew(ctx context.Context, expiry *time.Timer) {
	start := p.cfg.Clock()
	// A renewal that hangs (a partition that drops packets) must not hold
	// back the lapse: Run looks at the expiry timer only between renewals,
	// so the call ends at the trust deadline at the latest, and Lost
	// closes then, before the key can expire for the other replicas.
	timeout := p.cfg.RenewEvery
	p.mu.Lock()
	if !p.validUntil.IsZero() {
		timeout = min(timeout, p.validUntil.Sub(start))
	}
	p.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, timeout)
	err := p.rdb.Set(rctx, p.cfg.Key, p.cfg.Value, p.cfg.TTL).Err()
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			p.cfg.Logger.Warn("presence: renew liveness key", zap.Error(err))
		}
		return
	}
	until := Window(p.cfg.TTL).Until(start)
	p.mu.Lock()
	p.validUntil = until
	select {
	case <-p.lost:
		p.lost = make(chan struct{})
	default:
	}
	p.mu.Unlock()
	// The clock that set until, not time.Now: with an injected or skewed
	// clock (pkg/wallclock) time.Until would be off by the skew, and the
	// lapse would fire minutes late or never.
	expiry.Reset(until.Sub(p.cfg.Clock()))
	p.readyOnce.Do(func() { close(p.ready) })
}

func (p *Presence) expire(force bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !force && p.cfg.Clock().Before(p.validUntil) && !isClosed(p.lost) {
		// Timer fired early relative to an injected clock: stay valid.
		return
	}
	p.validUntil = time.Time{}
	if !isClosed(p.lost) {
		close(p.lost)
		if !force {
			p.cfg.Logger.Warn("presence: liveness lapsed; stopping owned work")
		}
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
