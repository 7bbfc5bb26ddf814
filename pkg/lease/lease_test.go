package lease_test

import (
	"context"
	"errors"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/pkg/lease"
)

const key = "agentsmith:leader:test"

func newLease(t *testing.T, rdb redis.UniversalClient, instance string, cfg lease.Config) *lease.Lease {
	t.Helper()
	cfg.Key, cfg.Instance = key, instance
	cfg.Logger = zaptest.NewLogger(t).Named(instance)
	return lease.New(rdb, cfg)
}

func TestTakeoverAfterExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	cfg := lease.Config{TTL: time.Second}
	a := newLease(t, srv.Client(t), "a", cfg)
	b := newLease(t, srv.Client(t), "b", cfg)

	mustBool(t, "a acquires", true)(a.TryAcquire(ctx))
	mustBool(t, "b while a holds", false)(b.TryAcquire(ctx))
	mustHolder(t, b, "a")

	// a stops renewing; b polls until the key expires.
	eventually.Wait(t, 5*time.Second, "b takes over", func() bool {
		ok, err := b.TryAcquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	})
	if !b.Valid() {
		t.Fatal("b just acquired but is not Valid")
	}
	mustHolder(t, a, "b")

	// The old holder's renewal is refused and ends its term.
	mustBool(t, "a renews after takeover", false)(a.Renew(ctx))
	if a.Valid() {
		t.Fatal("a still Valid after a refused renewal")
	}
	// Its release must not delete b's key.
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	mustHolder(t, a, "b")
	mustBool(t, "b renews", true)(b.Renew(ctx))
}

func TestReleaseHandsOverImmediately(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	cfg := lease.Config{TTL: time.Minute}
	a := newLease(t, srv.Client(t), "a", cfg)
	b := newLease(t, srv.Client(t), "b", cfg)

	mustBool(t, "a acquires", true)(a.TryAcquire(ctx))
	mustBool(t, "b while a holds", false)(b.TryAcquire(ctx))
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if a.Valid() {
		t.Fatal("a Valid after Release")
	}
	mustHolder(t, a, "")
	mustBool(t, "b right after release", true)(b.TryAcquire(ctx))
	mustHolder(t, a, "b")
}

func TestValidityDeadlineUsesClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	var mu sync.Mutex
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	a := newLease(t, srv.Client(t), "a", lease.Config{TTL: 10 * time.Second, Trust: 0.5, Clock: clock})
	if a.Valid() {
		t.Fatal("Valid before acquiring")
	}
	mustBool(t, "acquire", true)(a.TryAcquire(ctx))
	advance(5*time.Second - time.Millisecond)
	if !a.Valid() {
		t.Fatal("not Valid inside the trust window")
	}
	advance(time.Millisecond)
	if a.Valid() {
		t.Fatal("Valid at start+Trust*TTL")
	}
	// A successful renewal opens a new window from the renewal's start.
	mustBool(t, "renew", true)(a.Renew(ctx))
	if !a.Valid() {
		t.Fatal("not Valid after renewal")
	}
	// TryAcquire while holding renews the same term.
	mustBool(t, "try acquire while holding", true)(a.TryAcquire(ctx))
	advance(5 * time.Second)
	if a.Valid() {
		t.Fatal("Valid after the renewed window")
	}
}

// events is an ordered log of what the leaders did.
type events struct {
	mu  sync.Mutex
	log []string
}

func (e *events) add(s string) { e.mu.Lock(); e.log = append(e.log, s); e.mu.Unlock() }

func (e *events) index(s string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, v := range e.log {
		if v == s {
			return i
		}
	}
	return -1
}

func (e *events) has(s string) func() bool { return func() bool { return e.index(s) >= 0 } }

func (e *events) snapshot() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.log...)
}

// leader returns a Run fn that records its start and the cancellation of
// its leader context.
func leader(ev *events, name string) func(context.Context) {
	return func(ctx context.Context) {
		ev.add(name + ":start")
		<-ctx.Done()
		ev.add(name + ":stop")
	}
}

// runLease runs l.Run in a goroutine and returns a stop function that
// cancels it and waits (with a deadline) for Run to return nil.
func runLease(t *testing.T, l *lease.Lease, fn func(context.Context)) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, fn) }()
	stopped := false
	stop = func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after cancel")
		}
	}
	t.Cleanup(stop)
	return stop
}

// stallHook makes every Lua script call (renew, release) of one client hang
// until the call's context ends or the stall is lifted: a holder whose Redis
// calls stop coming back.
type stallHook struct {
	on   atomic.Bool
	lift chan struct{}
}

func (h *stallHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *stallHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *stallHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.on.Load() && (cmd.Name() == "evalsha" || cmd.Name() == "eval") {
			select {
			case <-h.lift:
			case <-ctx.Done():
				cmd.SetErr(ctx.Err())
				return ctx.Err()
			}
		}
		return next(ctx, cmd)
	}
}

func TestStalledHolderStopsBeforeTakeover(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ev := &events{}
	hook := &stallHook{lift: make(chan struct{})}
	rdbA := srv.Client(t)
	rdbA.AddHook(hook)
	cfg := lease.Config{TTL: time.Second, RenewEvery: 50 * time.Millisecond, RetryEvery: 10 * time.Millisecond}
	a := newLease(t, rdbA, "a", cfg)
	b := newLease(t, srv.Client(t), "b", cfg)

	runLease(t, a, leader(ev, "a"))
	eventually.Wait(t, 5*time.Second, "a leads", ev.has("a:start"))
	runLease(t, b, leader(ev, "b"))

	// a's renewals now hang. Its validity timer must cancel its leader
	// context (start of last renewal + 0.6*TTL) before the key expires
	// (that renewal + TTL) and b can start: a 400ms margin.
	hook.on.Store(true)
	eventually.Wait(t, 10*time.Second, "b leads", ev.has("b:start"))
	close(hook.lift)

	got := ev.snapshot()
	aStop, bStart := ev.index("a:stop"), ev.index("b:start")
	if aStop < 0 || aStop > bStart {
		t.Fatalf("events %v: a must stop before b starts", got)
	}
	if ev.index("b:stop") >= 0 || len(got) != 3 {
		t.Fatalf("events %v: want exactly [a:start a:stop b:start]", got)
	}
}

func TestRefusedRenewalCancelsLeader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ev := &events{}
	a := newLease(t, srv.Client(t), "a", lease.Config{TTL: time.Minute, RenewEvery: 10 * time.Millisecond, RetryEvery: time.Minute})
	runLease(t, a, leader(ev, "a"))
	eventually.Wait(t, 5*time.Second, "a leads", ev.has("a:start"))

	// Someone else owns the key now (e.g. it expired during a partition).
	if err := rdb.Set(ctx, key, "intruder/x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 5*time.Second, "a stops", ev.has("a:stop"))
	mustHolder(t, a, "intruder")
}

// After Redis loses its data the lease key is simply gone: the holder's
// renewal is refused, and it must lead again at once (a new term, so its
// services restart and see the loss), not after RetryEvery with nobody
// leading meanwhile.
func TestLeaderReacquiresAtOnceWhenTheKeyVanished(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ev := &events{}
	var starts atomic.Int32
	a := newLease(t, srv.Client(t), "a", lease.Config{TTL: time.Minute, RenewEvery: 10 * time.Millisecond, RetryEvery: time.Hour})
	runLease(t, a, func(ctx context.Context) {
		starts.Add(1)
		leader(ev, "a")(ctx)
	})
	eventually.Wait(t, 5*time.Second, "a leads", ev.has("a:start"))
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 5*time.Second, "a leads a second term", func() bool { return starts.Load() >= 2 })
	mustHolder(t, a, "a")
	if !a.Valid() {
		t.Error("the new term is not valid")
	}
}

func TestShutdownReleasesForNextLeader(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ev := &events{}
	// TTL far beyond the test's deadlines: only Release can hand over.
	cfg := lease.Config{TTL: time.Minute, RetryEvery: 10 * time.Millisecond}
	a := newLease(t, srv.Client(t), "a", cfg)
	b := newLease(t, srv.Client(t), "b", cfg)

	stopA := runLease(t, a, leader(ev, "a"))
	eventually.Wait(t, 5*time.Second, "a leads", ev.has("a:start"))
	runLease(t, b, leader(ev, "b"))

	stopA() // cancels fn, waits for it, releases, returns nil
	if ev.index("a:stop") < 0 {
		t.Fatalf("events %v: Run returned before fn stopped", ev.snapshot())
	}
	eventually.Wait(t, 5*time.Second, "b leads", ev.has("b:start"))
	mustHolder(t, b, "b")
}

func TestFnReturnEndsTerm(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a := newLease(t, srv.Client(t), "a", lease.Config{TTL: time.Minute, RetryEvery: 10 * time.Millisecond})
	var terms atomic.Int32
	runLease(t, a, func(context.Context) { terms.Add(1) })
	// Each return releases the lease, so Run can start another term.
	eventually.Wait(t, 5*time.Second, "three terms", func() bool { return terms.Load() >= 3 })
}

func TestHolderFree(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a := newLease(t, srv.Client(t), "a", lease.Config{})
	mustHolder(t, a, "")
	if err := a.Release(context.Background()); err != nil {
		t.Fatalf("Release without holding: %v", err)
	}
	mustBool(t, "renew without holding", false)(a.Renew(context.Background()))
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]lease.Config{
		"no key":      {Instance: "a"},
		"no instance": {Key: key},
		"slash":       {Key: key, Instance: "a/b"},
		"trust 1":     {Key: key, Instance: "a", Trust: 1},
		"negative":    {Key: key, Instance: "a", TTL: -1},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("New did not panic")
				}
			}()
			lease.New(nil, cfg)
		})
	}
}

func mustHolder(t *testing.T, l *lease.Lease, want string) {
	t.Helper()
	got, err := l.Holder(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("Holder = %q, want %q", got, want)
	}
}

func mustBool(t *testing.T, what string, want bool) func(bool, error) {
	t.Helper()
	return func(got bool, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got != want {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
	}
}

func TestFenceFailsOnceAnotherHolderTookOver(t *testing.T) {
	t.Parallel()
	r := redistest.Start(t)
	rdb := r.Client(t)
	ctx := context.Background()
	a := lease.New(rdb, lease.Config{Key: "agentsmith:leader:fence", Instance: "a", TTL: time.Minute})
	if err := a.Fence(ctx); !errors.Is(err, lease.ErrNotHeld) {
		t.Fatalf("fence before acquiring: %v, want lease.ErrNotHeld", err)
	}
	if ok, err := a.TryAcquire(ctx); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	if err := a.Fence(ctx); err != nil {
		t.Fatalf("fence while holding: %v", err)
	}
	// The key expired while a was paused, and b took over; a's local
	// deadline has not passed yet (a long TTL), so only Redis can tell.
	if err := rdb.Del(ctx, "agentsmith:leader:fence").Err(); err != nil {
		t.Fatal(err)
	}
	b := lease.New(rdb, lease.Config{Key: "agentsmith:leader:fence", Instance: "b", TTL: time.Minute})
	if ok, err := b.TryAcquire(ctx); err != nil || !ok {
		t.Fatalf("b acquire: %v %v", ok, err)
	}
	if err := a.Fence(ctx); !errors.Is(err, lease.ErrNotHeld) {
		t.Errorf("fence after takeover: %v, want lease.ErrNotHeld", err)
	}
	if err := b.Fence(ctx); err != nil {
		t.Errorf("new holder's fence: %v", err)
	}
}
