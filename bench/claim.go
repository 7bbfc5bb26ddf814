package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// ClaimResult is the claim path at one concurrency.
type ClaimResult struct {
	Rows []ClaimRow `json:"rows"`
}

// ClaimRow is one concurrency level.
type ClaimRow struct {
	Concurrency     int            `json:"concurrency"`
	Claims          int            `json:"claims"`
	ClaimsPerSec    float64        `json:"claims_per_sec"`
	RoundTripsPer   float64        `json:"redis_round_trips_per_claim"`
	RedisCmdsPer    float64        `json:"redis_cmds_per_claim"`
	APICallsPer     float64        `json:"api_calls_per_claim"`
	Outcomes        map[string]int `json:"outcomes"`
	RedisCmdsByKind string         `json:"redis_cmds_by_kind"`
}

// roundTrips counts what a go-redis client sends: one per command, one per
// pipeline (a Lua script is one round trip however many commands it runs).
type roundTrips struct{ n atomic.Int64 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}
func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(1); return next(ctx, cmds) }
}

func (b *bench) countedClient() (*redis.Client, *roundTrips) {
	c := redis.NewClient(&redis.Options{Addr: b.addr, PoolSize: 128})
	h := &roundTrips{}
	c.AddHook(h)
	return c, h
}

const (
	claimsPerRun = 2000
	claimWarmup  = 100
)

func (b *bench) claimPath(ctx context.Context) error {
	fmt.Printf("## 3. Claim path: ClaimService.Claim of Pending tickets (GitHub tracker → trackersim over HTTP), %d claims per row, %d warm-up excluded\n\n", claimsPerRun, claimWarmup)
	fmt.Println("| concurrency | claims/s | Redis round trips/claim | Redis cmds/claim (incl. inside Lua) | tracker API calls/claim | outcomes | Redis cmds by kind |")
	fmt.Println("|---:|---:|---:|---:|---:|---|---|")
	res := &ClaimResult{}
	for _, c := range []int{1, 16} {
		if err := b.flush(ctx); err != nil {
			return err
		}
		rdb, rt := b.countedClient()
		w, err := newWorld(rdb, projectSpec{name: "claim", repo: "acme/claim", command: []string{"true"}})
		if err != nil {
			return err
		}
		// Keep-alive connections for c concurrent claims.
		if tr, ok := http.DefaultTransport.(*http.Transport); ok {
			tr.MaxIdleConnsPerHost = max(tr.MaxIdleConnsPerHost, 64)
		}
		total := claimWarmup + claimsPerRun
		for i := range total {
			w.sim.CreateIssue("acme/claim", fmt.Sprintf("t%d", i), "", trigger)
		}
		row, err := b.claimRun(ctx, w, rt, c, total)
		w.close()
		_ = rdb.Close()
		if err != nil {
			return err
		}
		res.Rows = append(res.Rows, row)
		fmt.Printf("| %d | %.0f | %.2f | %.2f | %.2f | %v | %s |\n", row.Concurrency, row.ClaimsPerSec, row.RoundTripsPer, row.RedisCmdsPer,
			row.APICallsPer, row.Outcomes, row.RedisCmdsByKind)
	}
	b.res.Claim = res
	fmt.Println()
	return nil
}

func (b *bench) claimRun(ctx context.Context, w *world, rt *roundTrips, c, total int) (ClaimRow, error) {
	claim := func(from, to int, outcomes map[string]int) error {
		var next atomic.Int64
		next.Store(int64(from))
		var mu sync.Mutex
		var firstErr error
		var wg sync.WaitGroup
		for range c {
			wg.Go(func() {
				for {
					n := int(next.Add(1))
					if n > to {
						return
					}
					r, err := w.claims.Claim(ctx, ref("claim", "acme/claim", n), lifecycle.SourcePoll, 1)
					mu.Lock()
					if err != nil && firstErr == nil {
						firstErr = err
					}
					outcomes[string(r.Outcome)]++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return firstErr
	}
	if err := claim(0, claimWarmup, map[string]int{}); err != nil {
		return ClaimRow{}, err
	}
	cnt, err := startCount(ctx, b.rdb)
	if err != nil {
		return ClaimRow{}, err
	}
	before := w.apiSnap()
	rt0 := rt.n.Load()
	outcomes := map[string]int{}
	start := time.Now()
	if err := claim(claimWarmup, total, outcomes); err != nil {
		return ClaimRow{}, err
	}
	el := time.Since(start)
	n := float64(total - claimWarmup)
	rts := rt.n.Load() - rt0
	cmds, byKind, err := cnt.stop(ctx)
	if err != nil {
		return ClaimRow{}, err
	}
	_, api, _ := w.apiDelta(before)
	return ClaimRow{Concurrency: c, Claims: int(n), ClaimsPerSec: n / el.Seconds(), RoundTripsPer: float64(rts) / n,
		RedisCmdsPer: float64(cmds) / n, APICallsPer: float64(api) / n, Outcomes: outcomes, RedisCmdsByKind: topCommands(byKind, n, 8)}, nil
}

var _ = net.JoinHostPort
