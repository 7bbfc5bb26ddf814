package presence_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/pkg/presence"
)

func TestPresenceLifecycle(t *testing.T) {
	r := redistest.Start(t)
	rdb := r.Client(t)
	p := presence.New(rdb, presence.Config{Key: "agentsmith:instance:a", Value: "a", TTL: time.Second})
	if p.Valid() {
		t.Fatal("valid before the first renewal")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	<-p.Ready()
	if !p.Valid() {
		t.Fatal("not valid after the first renewal")
	}
	if ttl := rdb.PTTL(ctx, "agentsmith:instance:a").Val(); ttl <= 0 || ttl > time.Second {
		t.Fatalf("key TTL %s, want within (0, 1s]", ttl)
	}
	lost := p.Lost()
	// Renewals start failing: the presence must lapse (Lost closes) before
	// the key's TTL could have run out for anyone watching it.
	r.Kill()
	select {
	case <-lost:
	case <-time.After(5 * time.Second):
		t.Fatal("Lost did not close after renewals stopped")
	}
	// How soon Lost closes depends on the scheduler; the bound that
	// matters (trust ends before the key's TTL) is checked with an
	// injected clock in TestTrustEndsBeforeTheKeyExpires.
	if p.Valid() {
		t.Error("still valid after lapsing")
	}
	r.Restart()
	eventually.Wait(t, 10*time.Second, "presence to come back", p.Valid)
	cancel()
	<-done
	if n := r.Client(t).Exists(context.Background(), "agentsmith:instance:a").Val(); n != 0 {
		t.Error("the liveness key must be deleted on shutdown")
	}
}

// Valid turns false at DefaultTrust × TTL after the last renewal started,
// while the key still has TTL left in Redis: whoever watches the key sees
// this replica alive only while it still trusts itself.
func TestTrustEndsBeforeTheKeyExpires(t *testing.T) {
	t.Parallel()
	r := redistest.Start(t)
	rdb := r.Client(t)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ttl := 10 * time.Second
	p := presence.New(rdb, presence.Config{Key: "agentsmith:instance:b", Value: "b", TTL: ttl, RenewEvery: time.Hour, Clock: clock})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-p.Ready()
	trust := time.Duration(float64(ttl) * presence.DefaultTrust)
	mu.Lock()
	now = now.Add(trust - time.Millisecond)
	mu.Unlock()
	if !p.Valid() {
		t.Fatal("not valid just before the trust deadline")
	}
	mu.Lock()
	now = now.Add(time.Millisecond)
	mu.Unlock()
	if p.Valid() {
		t.Fatal("still valid at the trust deadline")
	}
	if left := rdb.PTTL(ctx, "agentsmith:instance:b").Val(); left < ttl-trust-time.Second {
		t.Errorf("key has %s left when trust ends; want about %s", left, ttl-trust)
	}
}

func TestLostIsClosedWhileNotValid(t *testing.T) {
	t.Parallel()
	p := presence.New(nil, presence.Config{Key: "k"})
	select {
	case <-p.Lost():
	default:
		t.Fatal("a presence that never renewed must report Lost")
	}
}

// hangHook makes every command hang until its context ends once hang is
// set, the way a Redis behind a dropped network answers nothing; until
// then it records when each command started.
type hangHook struct {
	hang   atomic.Bool
	mu     sync.Mutex
	lastOK time.Time
}

func (h *hangHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *hangHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.hang.Load() {
			<-ctx.Done()
			return ctx.Err()
		}
		h.mu.Lock()
		h.lastOK = time.Now()
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (h *hangHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A renewal that hangs (Redis unreachable without an error: a partition
// that drops packets) must not hold back the lapse: Lost closes at the
// trust deadline, before the key can expire for the other replicas, not
// when the hanging call gives up. Were Run to wait out the renewal's
// whole RenewEvery timeout before it looked at the expiry timer, then with
// RenewEvery 1 s and a 2 s TTL the lapse would come when the key had
// already expired and another replica could have taken over the work.
func TestLostDoesNotWaitForAHangingRenewal(t *testing.T) {
	t.Parallel()
	r := redistest.Start(t)
	rdb := r.Client(t)
	h := &hangHook{}
	rdb.AddHook(h)
	const ttl = 2 * time.Second
	p := presence.New(rdb, presence.Config{Key: "agentsmith:instance:h", Value: "h", TTL: ttl, RenewEvery: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-p.Ready()
	lost := p.Lost()
	h.hang.Store(true)
	h.mu.Lock()
	last := h.lastOK // the start of the last renewal that reached Redis
	h.mu.Unlock()
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("Lost did not close while renewals hung")
	}
	if at, expires := time.Now(), last.Add(ttl); !at.Before(expires) {
		t.Errorf("Lost closed %s after the key could expire (last renewal %s, TTL %s)", at.Sub(expires), last.Format("15:04:05.000"), ttl)
	}
}

// A replica whose clock runs behind or ahead (pkg/wallclock skew) still
// sees its lapse before its key can expire: the expiry timer is measured
// on the clock that set the trust deadline. With time.Until a clock two
// minutes behind never closed Lost, and one ahead closed it two minutes
// late (found by the chaos run's split brain with skewed replicas).
func TestLostDoesNotDependOnClockSkew(t *testing.T) {
	t.Parallel()
	for _, skew := range []time.Duration{-2 * time.Minute, 2 * time.Minute} {
		r := redistest.Start(t)
		rdb := r.Client(t)
		h := &hangHook{}
		rdb.AddHook(h)
		const ttl = 2 * time.Second
		p := presence.New(rdb, presence.Config{Key: "agentsmith:instance:s", Value: "s", TTL: ttl, RenewEvery: time.Second,
			Clock: func() time.Time { return time.Now().Add(skew) }})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = p.Run(ctx) }()
		<-p.Ready()
		lost := p.Lost()
		h.hang.Store(true)
		h.mu.Lock()
		last := h.lastOK
		h.mu.Unlock()
		select {
		case <-lost:
		case <-time.After(10 * time.Second):
			t.Errorf("skew %s: Lost did not close within 10 s of renewals hanging", skew)
		}
		if at, expires := time.Now(), last.Add(ttl); !at.Before(expires) {
			t.Errorf("skew %s: Lost closed %s after the key could expire", skew, at.Sub(expires))
		}
		cancel()
		<-done
	}
}
