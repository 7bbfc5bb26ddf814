package audit_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

func ref(n int) platforms.Ref {
	return platforms.Ref{Platform: "github", Project: "app", ID: fmt.Sprintf("acme/app#%d", n)}
}

func event(n, attempt int) lifecycle.Event {
	return lifecycle.Event{Kind: lifecycle.EventTransition, At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Ref: ref(n),
		From: lifecycle.Enqueued, To: lifecycle.InProgress, Outcome: "started", Attempt: attempt,
		Owner: lifecycle.OwnerExecutor, Instance: "replica-a", Source: lifecycle.SourceWebhook, RequestID: "req-1",
		Reason: "a reason", Wait: 1500 * time.Millisecond, Run: 3 * time.Second}
}

// start runs w until the test ends and returns a stop func that waits for
// Run to return.
func start(t *testing.T, w *audit.Writer) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(func() { cancel(); <-done })
	return stop
}

func TestEventsInOrderRoundTrip(t *testing.T) {
	r := redistest.Start(t)
	rdb := r.Client(t)
	w := audit.NewWriter(rdb, audit.WriterConfig{Batch: 7})
	start(t, w)
	const n = 300
	for i := range n {
		w.Observe(event(i%5, i))
	}
	eventually.Wait(t, 10*time.Second, "every event written", func() bool { return w.Written() == n })
	var got []audit.Entry
	if err := audit.NewReader(rdb).Since(context.Background(), time.Time{}, func(e audit.Entry) bool {
		got = append(got, e)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("read %d entries, want %d", len(got), n)
	}
	for i, e := range got {
		if e.Event.Attempt != i {
			t.Fatalf("entry %d has attempt %d: out of order", i, e.Event.Attempt)
		}
	}
	want := event(4, 299)
	if g := got[n-1].Event; fmt.Sprint(g) != fmt.Sprint(want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", g, want)
	}
	if w.Dropped() != 0 {
		t.Errorf("dropped %d", w.Dropped())
	}

	rd := audit.NewReader(rdb)
	hist, err := rd.History(context.Background(), ref(3), time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != n/5 {
		t.Fatalf("history of ticket 3 has %d entries, want %d", len(hist), n/5)
	}
	for i, e := range hist {
		if e.Event.Ref != ref(3) || e.Event.Attempt != 3+5*i {
			t.Fatalf("history[%d] = %v attempt %d", i, e.Event.Ref, e.Event.Attempt)
		}
	}
	last2, err := rd.History(context.Background(), ref(3), time.Time{}, 2)
	if err != nil || len(last2) != 2 || last2[1].Event.Attempt != 298 || last2[0].Event.Attempt != 293 {
		t.Errorf("History limit 2 = %+v, %v", last2, err)
	}
	recent, err := rd.Recent(context.Background(), 3)
	if err != nil || len(recent) != 3 || recent[0].Event.Attempt != 299 || recent[2].Event.Attempt != 297 {
		t.Errorf("Recent(3) = %+v, %v", recent, err)
	}
	if at, err := audit.IDTime(recent[0].ID); err != nil || time.Since(at) > time.Minute {
		t.Errorf("IDTime(%s) = %v, %v", recent[0].ID, at, err)
	}
}

func TestCapRespected(t *testing.T) {
	r := redistest.Start(t)
	rdb := r.Client(t)
	const maxLen = 100
	w := audit.NewWriter(rdb, audit.WriterConfig{MaxLen: maxLen})
	start(t, w)
	for i := range 2000 {
		w.Observe(event(1, i))
	}
	eventually.Wait(t, 10*time.Second, "every event written", func() bool { return w.Written()+w.Dropped() == 2000 })
	n, err := rdb.XLen(context.Background(), keys.Audit()).Result()
	if err != nil {
		t.Fatal(err)
	}
	// MAXLEN ~ keeps at least maxLen and trims whole nodes of up to 100
	// entries (stream-node-max-entries).
	if n < maxLen || n > maxLen+100 {
		t.Errorf("stream length %d, want between %d and %d", n, maxLen, maxLen+100)
	}
	recent, err := audit.NewReader(rdb).Recent(context.Background(), 1)
	if err != nil || len(recent) != 1 || recent[0].Event.Attempt != 1999 {
		t.Errorf("newest entry = %+v, %v; want attempt 1999", recent, err)
	}
}

func TestRedisDownDropsWithoutBlocking(t *testing.T) {
	r := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr(), DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	w := audit.NewWriter(rdb, audit.WriterConfig{Buffer: 8, Batch: 4, ReportInterval: 50 * time.Millisecond})
	start(t, w)
	r.Kill()
	// Observe runs on the test goroutine: if it blocked while Redis is
	// down, the test would hang here instead of finishing the loop.
	for i := range 10_000 {
		w.Observe(event(1, i))
	}
	if w.Dropped() < 10_000-8-4 {
		t.Errorf("dropped %d of 10000 with a buffer of 8 and Redis down", w.Dropped())
	}
	eventually.Wait(t, 10*time.Second, "the buffered events to fail and be counted", func() bool { return w.Dropped() == 10_000 })
	if w.Written() != 0 {
		t.Errorf("written %d with Redis down", w.Written())
	}

	r.Restart()
	w.Observe(event(2, 1))
	eventually.Wait(t, 10*time.Second, "writes to resume", func() bool { return w.Written() == 1 })
}

func TestFlushOnShutdown(t *testing.T) {
	r := redistest.Start(t)
	rdb := r.Client(t)
	w := audit.NewWriter(rdb, audit.WriterConfig{Batch: 10})
	for i := range 95 {
		w.Observe(event(1, i))
	}
	// Run with a context that is already done: everything buffered must be
	// written before Run returns.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.XLen(context.Background(), keys.Audit()).Result(); err != nil || n != 95 {
		t.Errorf("stream length after shutdown = %d, %v; want 95", n, err)
	}
}

func TestFollow(t *testing.T) {
	r := redistest.Start(t)
	rdb := r.Client(t)
	w := audit.NewWriter(rdb, audit.WriterConfig{})
	start(t, w)
	w.Observe(event(1, 1)) // before following: not delivered
	eventually.Wait(t, 5*time.Second, "first event", func() bool { return w.Written() == 1 })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan audit.Entry, 10)
	done := make(chan error, 1)
	go func() {
		done <- audit.NewReader(rdb).Follow(ctx, "$", func(e audit.Entry) error { got <- e; return nil })
	}()
	// Follow resolves "$" before its first XREAD; events written after it
	// started arrive, earlier ones do not, whatever the timing.
	eventually.Wait(t, 5*time.Second, "follower to block", func() bool {
		clients, _ := rdb.ClientList(context.Background()).Result()
		return strings.Contains(clients, "cmd=xread")
	})
	w.Observe(event(1, 2))
	w.Observe(event(1, 3))
	for want := 2; want <= 3; want++ {
		select {
		case e := <-got:
			if e.Event.Attempt != want {
				t.Fatalf("followed attempt %d, want %d", e.Event.Attempt, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no event %d", want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Follow: %v", err)
	}
}

// A gate's decision keeps who made it, the gated stage and how long the
// ticket awaited approval; a run's transition keeps its stage.
func TestDecisionRoundTrip(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	w := audit.NewWriter(rdb, audit.WriterConfig{})
	start(t, w)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	want := []lifecycle.Event{
		{Kind: lifecycle.EventTransition, At: at, Ref: ref(1), From: lifecycle.InProgress, To: lifecycle.AwaitingApproval,
			Outcome: "stage succeeded", Owner: lifecycle.OwnerExecutor, Run: 2 * time.Minute, Stage: "plan"},
		{Kind: lifecycle.EventDecision, At: at, Ref: ref(1), From: lifecycle.AwaitingApproval, To: lifecycle.Enqueued,
			Outcome: "approved", Owner: lifecycle.OwnerApprovalGate, Reason: "approved by dana", Stage: "implement", Actor: "dana",
			ApprovalWait: 95 * time.Minute},
	}
	for _, ev := range want {
		w.Observe(ev)
	}
	eventually.Wait(t, 10*time.Second, "both events written", func() bool { return w.Written() == 2 })
	got, err := audit.NewReader(rdb).History(t.Context(), ref(1), time.Time{}, 0)
	if err != nil || len(got) != 2 {
		t.Fatalf("history = %+v, %v; want 2 entries", got, err)
	}
	for i := range want {
		// A decision's From/To are not kept (only a transition's are).
		g := got[i].Event
		if g.Stage != want[i].Stage || g.Actor != want[i].Actor || g.ApprovalWait != want[i].ApprovalWait || g.Run != want[i].Run {
			t.Errorf("entry %d: stage %q actor %q approval wait %s run %s, want %q %q %s %s", i, g.Stage, g.Actor, g.ApprovalWait, g.Run,
				want[i].Stage, want[i].Actor, want[i].ApprovalWait, want[i].Run)
		}
	}
}
