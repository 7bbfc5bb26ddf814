package lease_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/pkg/lease"
)

// A lease's log lines carry each field once: the daemon's logger already
// names the instance, and the lease adds only its key.
func TestLogLinesCarryEachFieldOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(core).With(zap.String("instance", "replica-a"))
	l := lease.New(srv.Client(t), lease.Config{Key: key, Instance: "replica-a", TTL: time.Minute, Logger: log})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, func(ctx context.Context) { <-ctx.Done() }) }()
	eventually.Wait(t, 5*time.Second, "the lease acquired", func() bool { return logs.FilterMessage("lease acquired").Len() == 1 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	entries := logs.All()
	if len(entries) < 2 {
		t.Fatalf("logged %d lines, want the acquire and the end of the term", len(entries))
	}
	for _, e := range entries {
		// The logger's own fields and the line's, as an encoder writes them.
		enc := zapcore.NewMapObjectEncoder()
		seen := map[string]int{}
		for _, f := range e.Context {
			seen[f.Key]++
			f.AddTo(enc)
		}
		for k, n := range seen {
			if n > 1 {
				t.Errorf("%q carries %q %d times: %v", e.Message, k, n, enc.Fields)
			}
		}
		if enc.Fields["instance"] != "replica-a" || enc.Fields["lease"] != key {
			t.Errorf("%q fields = %v, want instance and lease", e.Message, enc.Fields)
		}
	}
}
