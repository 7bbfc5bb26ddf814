package redisserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/redisserver"
)

func TestStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := redisserver.Start(ctx, "", t.TempDir())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if p.Addr() == "" {
		t.Fatal("empty Addr")
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestStartBadBinary(t *testing.T) {
	_, err := redisserver.Start(context.Background(), "/nonexistent/redis-server", t.TempDir())
	if err == nil {
		t.Fatal("want error for a missing binary")
	}
}

func TestStartOwnDir(t *testing.T) {
	p, err := redisserver.Start(context.Background(), "", "")
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

// TestKillRestartKeepsAddrAndLosesData is what the chaos run relies on: a
// killed server comes back on the same address, empty, and the clients that
// hold the address reconnect by themselves.
func TestKillRestartKeepsAddrAndLosesData(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := redisserver.Start(ctx, "", t.TempDir())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	addr := p.Addr()
	rdb := redis.NewClient(p.ClientOptions())
	defer rdb.Close()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("set: %v", err)
	}
	if err := rdb.Save(ctx).Err(); err != nil { // a snapshot must not come back either
		t.Fatalf("save: %v", err)
	}
	if err := p.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if err := p.Kill(); err != nil {
		t.Fatalf("second Kill: %v", err)
	}
	probe := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer probe.Close()
	if err := probe.Ping(ctx).Err(); err == nil {
		t.Fatal("PING succeeded on a killed server")
	}
	if err := p.Restart(ctx); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if p.Addr() != addr {
		t.Fatalf("Restart moved the server from %s to %s", addr, p.Addr())
	}
	if n, err := rdb.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("after Restart: exists=%d err=%v (want an empty server)", n, err)
	}
}
