package queue_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
)

func newQueue(t testing.TB) (*queue.Queue, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	return queue.New(rdb, keys.Queue()), rdb
}

func push(t testing.TB, q *queue.Queue, payloads ...string) {
	t.Helper()
	for _, p := range payloads {
		if err := q.Push(context.Background(), []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
}

func strs(b [][]byte) []string {
	out := make([]string, len(b))
	for i, v := range b {
		out[i] = string(v)
	}
	return out
}

func TestFIFO(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, _ := newQueue(t)
	proc := keys.Processing("i1")
	push(t, q, "1", "2", "3")
	if n, err := q.Len(ctx); err != nil || n != 3 {
		t.Fatalf("Len = %d, %v", n, err)
	}
	for _, want := range []string{"1", "2", "3"} {
		got, err := q.Take(ctx, proc, time.Second)
		if err != nil || string(got) != want {
			t.Fatalf("Take = %q, %v; want %q", got, err, want)
		}
	}
	got, err := q.Take(ctx, proc, 50*time.Millisecond)
	if err != nil || got != nil {
		t.Fatalf("Take on empty queue = %q, %v; want nil, nil", got, err)
	}
	got, err = q.Take(ctx, proc, 0)
	if err != nil || got != nil {
		t.Fatalf("non-blocking Take on empty queue = %q, %v; want nil, nil", got, err)
	}
}

func TestTakeMovesToProcessingAndAckRemoves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, _ := newQueue(t)
	proc := keys.Processing("i1")
	push(t, q, "a", "b")

	got, err := q.Take(ctx, proc, time.Second)
	if err != nil || string(got) != "a" {
		t.Fatalf("Take = %q, %v", got, err)
	}
	entries, _ := q.Entries(ctx)
	pending, _ := q.ProcessingEntries(ctx, proc)
	if !slices.Equal(strs(entries), []string{"b"}) || !slices.Equal(strs(pending), []string{"a"}) {
		t.Fatalf("after take: queue %q processing %q", strs(entries), strs(pending))
	}
	if err := q.Ack(ctx, proc, got); err != nil {
		t.Fatal(err)
	}
	pending, _ = q.ProcessingEntries(ctx, proc)
	if len(pending) != 0 {
		t.Fatalf("after ack: processing %q", strs(pending))
	}
	if err := q.Ack(ctx, proc, got); err != nil {
		t.Fatalf("second Ack: %v", err)
	}
}

func TestCrashThenRequeueRestoresHead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, _ := newQueue(t)
	proc := keys.Processing("dead")
	push(t, q, "1", "2", "3", "4")
	// The consumer takes two and dies before acknowledging either.
	for range 2 {
		if _, err := q.Take(ctx, proc, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	push(t, q, "5")

	ks, err := q.ProcessingKeys(ctx, keys.ProcessingPattern())
	if err != nil || !slices.Equal(ks, []string{proc}) {
		t.Fatalf("ProcessingKeys = %q, %v", ks, err)
	}
	n, err := q.Requeue(ctx, proc)
	if err != nil || n != 2 {
		t.Fatalf("Requeue = %d, %v; want 2", n, err)
	}
	entries, _ := q.Entries(ctx)
	if want := []string{"1", "2", "3", "4", "5"}; !slices.Equal(strs(entries), want) {
		t.Fatalf("queue after requeue = %q, want %q", strs(entries), want)
	}
	if ks, _ := q.ProcessingKeys(ctx, keys.ProcessingPattern()); len(ks) != 0 {
		t.Fatalf("processing lists left: %q", ks)
	}
	if n, err := q.Requeue(ctx, proc); err != nil || n != 0 {
		t.Fatalf("second Requeue = %d, %v", n, err)
	}
}

func TestTakeReturnsOnCancel(t *testing.T) {
	t.Parallel()
	q, rdb := newQueue(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := q.Take(ctx, keys.Processing("i1"), time.Minute)
		done <- err
	}()
	// Cancel only once Take is blocked inside Redis.
	eventually.Wait(t, 5*time.Second, "Take to block", func() bool {
		info, err := rdb.Info(context.Background(), "clients").Result()
		return err == nil && !strings.Contains(info, "blocked_clients:0")
	})
	started := time.Now()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Take after cancel: %v, want context.Canceled", err)
		}
		if d := time.Since(started); d > time.Second {
			t.Fatalf("Take took %s to notice the cancel", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Take did not return after cancel")
	}
}

func TestTakeWakesOnPush(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, _ := newQueue(t)
	got := make(chan string, 1)
	go func() {
		b, err := q.Take(ctx, keys.Processing("i1"), 10*time.Second)
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- string(b)
	}()
	push(t, q, "late")
	select {
	case v := <-got:
		if v != "late" {
			t.Fatalf("Take = %q", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Take did not return the pushed entry")
	}
}

func TestConcurrentTakersTakeEachOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, rdb := newQueue(t)
	const items, takers = 2000, 20
	pipe := rdb.Pipeline()
	for i := range items {
		pipe.RPush(ctx, keys.Queue(), fmt.Sprintf("job-%04d", i))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	taken := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, takers)
	for w := range takers {
		wg.Go(func() {
			proc := keys.Processing(fmt.Sprintf("w%d", w))
			for {
				b, err := q.Take(ctx, proc, 20*time.Millisecond)
				if err != nil {
					errs <- err
					return
				}
				if b == nil {
					return // drained
				}
				mu.Lock()
				taken[string(b)]++
				mu.Unlock()
				if err := q.Ack(ctx, proc, b); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(taken) != items {
		t.Fatalf("%d distinct items taken, want %d", len(taken), items)
	}
	for k, n := range taken {
		if n != 1 {
			t.Fatalf("%s taken %d times", k, n)
		}
	}
	if ks, _ := q.ProcessingKeys(ctx, keys.ProcessingPattern()); len(ks) != 0 {
		t.Fatalf("processing lists left after acks: %q", ks)
	}
}

func BenchmarkPushTakeAck(b *testing.B) {
	ctx := context.Background()
	q, _ := newQueue(b)
	proc := keys.Processing("bench")
	payload := []byte(`{"ref":"github:org/repo#1","request_id":"0123456789abcdef"}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := q.Push(ctx, payload); err != nil {
			b.Fatal(err)
		}
		got, err := q.Take(ctx, proc, time.Second)
		if err != nil || got == nil {
			b.Fatalf("Take = %q, %v", got, err)
		}
		if err := q.Ack(ctx, proc, got); err != nil {
			b.Fatal(err)
		}
	}
}
