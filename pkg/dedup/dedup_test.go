package dedup_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/pkg/dedup"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

func TestSeenForget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	key := keys.Delivery("github", "d-1")

	seen := func(want bool) {
		t.Helper()
		got, err := dedup.Seen(ctx, rdb, key, keys.DeliveryTTL)
		if err != nil || got != want {
			t.Fatalf("Seen = %v, %v; want %v", got, err, want)
		}
	}
	seen(false)
	seen(true)
	if ttl := rdb.TTL(ctx, key).Val(); ttl <= 0 || ttl > keys.DeliveryTTL {
		t.Fatalf("TTL = %s, want (0, %s]", ttl, keys.DeliveryTTL)
	}
	// Another platform's delivery with the same id is a different delivery.
	if got, err := dedup.Seen(ctx, rdb, keys.Delivery("gitlab", "d-1"), keys.DeliveryTTL); err != nil || got {
		t.Fatalf("other platform Seen = %v, %v", got, err)
	}
	if err := dedup.Forget(ctx, rdb, key); err != nil {
		t.Fatal(err)
	}
	seen(false)
	if err := dedup.Forget(ctx, rdb, keys.Delivery("github", "never")); err != nil {
		t.Fatalf("Forget of an unknown delivery: %v", err)
	}
}

func TestSeenExpires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	key := keys.Delivery("jira", "d-2")
	if got, err := dedup.Seen(ctx, rdb, key, 20*time.Millisecond); err != nil || got {
		t.Fatalf("Seen = %v, %v", got, err)
	}
	eventually.Wait(t, 5*time.Second, "the record to expire and be recorded afresh", func() bool {
		got, err := dedup.Seen(ctx, rdb, key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return !got
	})
}

func TestConcurrentDeliveriesHandledOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	key := keys.Delivery("azuredevops", "d-3")
	var fresh atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			got, err := dedup.Seen(ctx, rdb, key, time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			if !got {
				fresh.Add(1)
			}
		})
	}
	wg.Wait()
	if n := fresh.Load(); n != 1 {
		t.Fatalf("%d deliveries handled, want 1", n)
	}
}

func TestSeenRejectsNoTTL(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	if _, err := dedup.Seen(context.Background(), rdb, "k", 0); err == nil {
		t.Fatal("Seen with ttl 0 must fail (the record would never expire)")
	}
}
