package redisserver_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
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

// A rollback: RestartFrom brings back exactly what Snapshot saw, on the
// same address, and a server with AOF on has it on again afterwards.
func TestSnapshotRestartFromRollsBack(t *testing.T) {
	ctx := t.Context()
	p, err := redisserver.StartSpec(ctx, "", "", redisserver.Spec{Args: []string{"--appendonly", "yes", "--appendfsync", "everysec"}})
	if err != nil {
		t.Skip(err)
	}
	defer p.Stop()
	rdb := redis.NewClient(p.ClientOptions())
	defer rdb.Close()
	if err := rdb.Set(ctx, "old", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(t.TempDir(), "dump.rdb")
	if err := p.Snapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, "new", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.RestartFrom(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Exists(ctx, "old", "new").Result(); err != nil || n != 1 {
		t.Fatalf("after the rollback %d of old,new exist (%v), want only old", n, err)
	}
	if v, _ := rdb.Exists(ctx, "new").Result(); v != 0 {
		t.Fatal("a key written after the snapshot survived the rollback")
	}
	if on, err := rdb.ConfigGet(ctx, "appendonly").Result(); err != nil || on["appendonly"] != "yes" {
		t.Fatalf("appendonly = %v (%v), want yes again", on, err)
	}
	// AOF on: kill -9 and start again keeps what was acknowledged (the
	// write reaches the file before the reply; everysec only delays the
	// fsync, which a process crash does not need). CONFIG SET appendonly
	// yes rewrites the file first: wait for that.
	eventually.Wait(t, 10*time.Second, "INFO persistence to show AOF on and no rewrite in progress or scheduled", func() bool {
		info, _ := rdb.Info(ctx, "persistence").Result()
		return strings.Contains(info, "aof_enabled:1") && strings.Contains(info, "aof_rewrite_in_progress:0") &&
			strings.Contains(info, "aof_rewrite_scheduled:0")
	})
	if err := rdb.Set(ctx, "kept", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.Crash(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Exists(ctx, "old", "kept").Result(); err != nil || n != 2 {
		t.Errorf("after kill -9 with AOF, %d of old,kept exist (%v), want 2", n, err)
	}
	// Restart still means empty, AOF or not.
	if err := p.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.DBSize(ctx).Result(); n != 0 {
		t.Errorf("after Restart %d keys, want an empty server", n)
	}
}
