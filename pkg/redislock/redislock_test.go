package redislock_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
)

func TestLockLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	const key = "agentsmith:test-lock"
	a, b := redislock.NewToken(), redislock.NewToken()
	if len(a) != 32 || a == b {
		t.Fatalf("tokens %q %q: want two distinct 32-hex tokens", a, b)
	}

	mustBool(t, "acquire a", true)(redislock.Acquire(ctx, rdb, key, a, time.Minute))
	mustBool(t, "acquire b while held", false)(redislock.Acquire(ctx, rdb, key, b, time.Minute))
	mustBool(t, "check a", true)(redislock.Check(ctx, rdb, key, a))
	mustBool(t, "check b", false)(redislock.Check(ctx, rdb, key, b))

	tok, ttl, err := redislock.Holder(ctx, rdb, key)
	if err != nil || tok != a || ttl <= 0 || ttl > time.Minute {
		t.Fatalf("Holder = %q, %s, %v; want %q with 0 < ttl <= 1m", tok, ttl, err, a)
	}

	mustBool(t, "renew by b", false)(redislock.Renew(ctx, rdb, key, b, time.Hour))
	mustBool(t, "release by b", false)(redislock.Release(ctx, rdb, key, b))
	mustBool(t, "renew by a", true)(redislock.Renew(ctx, rdb, key, a, time.Hour))
	if _, ttl, _ := redislock.Holder(ctx, rdb, key); ttl <= time.Minute {
		t.Fatalf("ttl after renew = %s, want > 1m", ttl)
	}
	mustBool(t, "release by a", true)(redislock.Release(ctx, rdb, key, a))

	tok, ttl, err = redislock.Holder(ctx, rdb, key)
	if err != nil || tok != "" || ttl != 0 {
		t.Fatalf("Holder of free key = %q, %s, %v", tok, ttl, err)
	}
	mustBool(t, "check after release", false)(redislock.Check(ctx, rdb, key, a))
	mustBool(t, "renew after release", false)(redislock.Renew(ctx, rdb, key, a, time.Minute))
	mustBool(t, "release twice", false)(redislock.Release(ctx, rdb, key, a))
	mustBool(t, "acquire b after release", true)(redislock.Acquire(ctx, rdb, key, b, time.Minute))
}

func TestExpiryHandsOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	const key = "agentsmith:test-lock"
	a, b := redislock.NewToken(), redislock.NewToken()
	mustBool(t, "acquire a", true)(redislock.Acquire(ctx, rdb, key, a, 50*time.Millisecond))
	eventually.Wait(t, 5*time.Second, "a's lock to expire so b acquires it", func() bool {
		ok, err := redislock.Acquire(ctx, rdb, key, b, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	})
	mustBool(t, "renew by expired a", false)(redislock.Renew(ctx, rdb, key, a, time.Minute))
	mustBool(t, "release by expired a", false)(redislock.Release(ctx, rdb, key, a))
	mustBool(t, "check b", true)(redislock.Check(ctx, rdb, key, b))
}

func TestScriptsSurviveRestart(t *testing.T) {
	// Restart empties the script cache; Script.Run must fall back to EVAL.
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	const key = "agentsmith:test-lock"
	a := redislock.NewToken()
	mustBool(t, "acquire", true)(redislock.Acquire(ctx, rdb, key, a, time.Minute))
	mustBool(t, "renew", true)(redislock.Renew(ctx, rdb, key, a, time.Minute))
	srv.Restart()
	mustBool(t, "renew after data loss", false)(redislock.Renew(ctx, rdb, key, a, time.Minute))
	mustBool(t, "acquire again", true)(redislock.Acquire(ctx, rdb, key, a, time.Minute))
	mustBool(t, "release", true)(redislock.Release(ctx, rdb, key, a))
}

func TestRejectsTTLWithoutExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	if _, err := redislock.Acquire(ctx, rdb, "k", "t", 0); err == nil {
		t.Fatal("Acquire with ttl 0 must fail (it would never expire)")
	}
	if _, err := redislock.Renew(ctx, rdb, "k", "t", -time.Second); err == nil {
		t.Fatal("Renew with a negative ttl must fail")
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

func TestLockerIsExclusiveAndUnlocksOnlyItsOwn(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	l := redislock.Locker{RDB: rdb}
	unlock, ok, err := l.TryLock(ctx, "agentsmith:jira-label-lock:jira:P-1", 10*time.Second)
	if err != nil || !ok {
		t.Fatalf("first TryLock: %v %v", ok, err)
	}
	if _, ok, err := l.TryLock(ctx, "agentsmith:jira-label-lock:jira:P-1", 10*time.Second); err != nil || ok {
		t.Fatalf("second TryLock while held: ok=%v err=%v, want refused", ok, err)
	}
	unlock()
	unlock2, ok, err := l.TryLock(ctx, "agentsmith:jira-label-lock:jira:P-1", 10*time.Second)
	if err != nil || !ok {
		t.Fatalf("TryLock after unlock: %v %v", ok, err)
	}
	unlock() // a stale unlock must not free the new holder's lock
	if _, ok, _ := l.TryLock(ctx, "agentsmith:jira-label-lock:jira:P-1", 10*time.Second); ok {
		t.Error("a stale unlock freed another holder's lock")
	}
	unlock2()
}
