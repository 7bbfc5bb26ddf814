package presence_test

import (
	"context"
	"github.com/agentsmithd/agentsmithd/pkg/eventually"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/presence"
	"github.com/agentsmithd/agentsmithd/pkg/redistest"
)

func TestPresenceLifecycle(t *testing.T) {
	r := redistest.Start(t)
	rdb := r.Client(t)
	p := presence.New(rdb, presence.Config{Key: "agentsmith:instance:a", Value: "a", TTL: time.Second})
	if p.Valid() {
		t.Fatal("valid before the first renewal")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	<-p.Ready()
	if !p.Valid() {
		t.Fatal("not valid after the first renewal")
	}
	if ttl := rdb.PTTL(ctx, "agentsmith:instance:a").Val(); ttl <= 0 || ttl > time.Second {
		t.Fatalf("key TTL %s, want within (0, 1s]", ttl)
	}
	lost := p.Lost()
	// Renewals start failing: the presence must lapse (Lost closes) before
	// the key's TTL could have run out for anyone watching it.
	r.Kill()
	killed := time.Now()
	select {
	case <-lost:
	case <-time.After(5 * time.Second):
		t.Fatal("Lost did not close after renewals stopped")
	}
	if since := time.Since(killed); since >= time.Second {
		t.Errorf("lapsed %s after the last renewal could have happened; must be before the 1s TTL", since)
	}
	if p.Valid() {
		t.Error("still valid after lapsing")
	}
	r.Restart()
	eventually.Wait(t, 10*time.Second, "presence to come back", p.Valid)
	cancel()
	<-done
	if n := r.Client(t).Exists(context.Background(), "agentsmith:instance:a").Val(); n != 0 {
		t.Error("the liveness key must be deleted on shutdown")
	}
}

func TestLostIsClosedWhileNotValid(t *testing.T) {
	p := presence.New(nil, presence.Config{Key: "k"})
	select {
	case <-p.Lost():
	default:
		t.Fatal("a presence that never renewed must report Lost")
	}
}
