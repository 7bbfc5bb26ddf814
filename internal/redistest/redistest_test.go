package redistest_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
)

func TestStartKillRestartFlush(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t)
	if s.Addr() == "127.0.0.1:6379" {
		t.Fatal("harness must never use the default port")
	}
	rdb := s.Client(t)
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("set: %v", err)
	}

	s.Flush()
	if n, err := rdb.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("after Flush: exists=%d err=%v", n, err)
	}

	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("set: %v", err)
	}
	s.Kill()
	probe := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer probe.Close()
	if err := probe.Ping(ctx).Err(); err == nil {
		t.Fatal("PING succeeded on a killed server")
	}
	s.Restart()
	if n, err := rdb.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("after Restart: exists=%d err=%v (want an empty server)", n, err)
	}
	// Restart on a running server kills it first.
	s.Restart()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("ping after second restart: %v", err)
	}
}
