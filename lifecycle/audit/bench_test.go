package audit_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
)

// BenchmarkObserve is the cost on the hot path: one Observe call, with the
// writer draining into a real Redis.
func BenchmarkObserve(b *testing.B) {
	r := redistest.Start(b)
	w := audit.NewWriter(r.Client(b), audit.WriterConfig{Buffer: 1 << 16})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	ev := event(1, 1)
	b.ResetTimer()
	for range b.N {
		w.Observe(ev)
	}
	b.StopTimer()
	cancel()
	<-done
}

// BenchmarkWriteThrough measures events per second from Observe to Redis.
func BenchmarkWriteThrough(b *testing.B) {
	r := redistest.Start(b)
	w := audit.NewWriter(r.Client(b), audit.WriterConfig{Buffer: 1 << 16})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	ev := event(1, 1)
	start := time.Now()
	b.ResetTimer()
	for range b.N {
		for {
			before := w.Dropped()
			w.Observe(ev)
			if w.Dropped() == before {
				break
			}
			time.Sleep(time.Millisecond) // buffer full: let the writer catch up
		}
	}
	for w.Written() < uint64(b.N) {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
	cancel()
	<-done
}
