package redistest

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// RoundTrips is a go-redis hook counting what a client sends to Redis: one
// per command sent on its own, one per pipeline. Tests use it to guard that
// a batched read stays batched (a count, never a timing). A new
// connection's handshake (HELLO, then CLIENT SETINFO in a pipeline) also
// passes through the hooks; it is the pool's cost, not the caller's, so it
// is not counted.
type RoundTrips struct{ n atomic.Int64 }

// CountRoundTrips adds a RoundTrips hook to rdb and returns it.
func CountRoundTrips(rdb *redis.Client) *RoundTrips {
	rt := &RoundTrips{}
	rdb.AddHook(rt)
	return rt
}

// N returns the round trips counted since the hook was added or Reset.
func (r *RoundTrips) N() int64 { return r.n.Load() }

// Reset sets the count to zero.
func (r *RoundTrips) Reset() { r.n.Store(0) }

// DialHook implements redis.Hook.
func (r *RoundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (r *RoundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "hello" {
			r.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (r *RoundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && cmds[0].Name() != "client" {
			r.n.Add(1)
		}
		return next(ctx, cmds)
	}
}
