// Package redistest is the test harness around pkg/redisserver: one call,
// Start(t), gives a test a private redis-server on a free loopback port with
// persistence off and stops it at cleanup; Kill and Restart let a test
// simulate a Redis crash that loses every key. Clusters, Sentinel setups and
// TLS files are one call each too. Only tests import it; production code
// (the demo, chaos, the benchmark) uses pkg/redisserver directly.
//
// Tests never use 127.0.0.1:6379: a developer's own Redis stays untouched.
package redistest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/redisserver"
)

// Spec is what a server needs beyond the defaults (redisserver.Spec).
type Spec = redisserver.Spec

// Server is a test's private redis-server. Its methods fail the test on
// error, so call them from the test goroutine.
type Server struct {
	t testing.TB
	p *redisserver.Process
}

// Start runs a fresh redis-server for t on a free port and stops it at
// cleanup. A missing binary fails the test (it does not skip): a suite that
// silently skips its Redis tests proves nothing.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartSpec(t, Spec{})
}

// StartSpec is Start for a server described by spec (TLS, credentials,
// extra arguments, sentinel mode).
func StartSpec(t testing.TB, spec Spec) *Server {
	t.Helper()
	bin, err := redisserver.FindBinary()
	if err != nil {
		t.Fatalf("redistest: %v: install Redis (e.g. apt-get install redis-server) to run this test", err)
	}
	p, err := redisserver.StartSpec(context.Background(), bin, t.TempDir(), spec)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	s := &Server{t: t, p: p}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("redistest: %v", err)
		}
	})
	return s
}

// Addr is the server's "127.0.0.1:port"; it survives Restart.
func (s *Server) Addr() string { return s.p.Addr() }

// Client returns a new client for the server, closed at cleanup. It
// reconnects by itself after Kill and Restart.
func (s *Server) Client(t testing.TB) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(s.p.ClientOptions())
	t.Cleanup(func() {
		if err := rdb.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
			t.Errorf("redistest: close client: %v", err)
		}
	})
	return rdb
}

// Kill SIGKILLs the server, as a crash would, and waits for it to exit.
func (s *Server) Kill() {
	s.t.Helper()
	if err := s.p.Kill(); err != nil {
		s.t.Fatalf("%v", err)
	}
}

// Restart starts the server again on the same port with no data, killing it
// first if it still runs: the "Redis lost everything" scenario.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.p.Restart(context.Background()); err != nil {
		s.t.Fatalf("redistest: restart: %v", err)
	}
}

// Flush deletes every key (FLUSHALL), e.g. between sub-tests.
func (s *Server) Flush() {
	s.t.Helper()
	rdb := redis.NewClient(s.p.ClientOptions())
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		s.t.Fatalf("redistest: flushall on %s: %v", s.Addr(), err)
	}
}
