package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// ClaimResult is the claim path at one concurrency.
type ClaimResult struct {
	Rows []ClaimRow `json:"rows"`
}

// ClaimRow is one path at one concurrency level.
type ClaimRow struct {
	Path            string         `json:"path"`
	Concurrency     int            `json:"concurrency"`
	Claims          int            `json:"claims"`
	ClaimsPerSec    float64        `json:"claims_per_sec"`
	RoundTripsPer   float64        `json:"redis_round_trips_per_claim"`
	BudgetTripsPer  float64        `json:"budget_round_trips_per_claim"`
	RedisCmdsPer    float64        `json:"redis_cmds_per_claim"`
	APICallsPer     float64        `json:"api_calls_per_claim"`
	Outcomes        map[string]int `json:"outcomes"`
	RedisCmdsByKind string         `json:"redis_cmds_by_kind"`
}

// roundTrips counts what a go-redis client sends: one per command, one per
// pipeline (a Lua script is one round trip however many commands it runs).
// The tracker transport's shared rate-limit budget (pkg/budget: one read
// before each tracker request, on the same client) is counted apart, in
// budget: it is the tracker calls' cost, not the claim protocol's.
type roundTrips struct{ n, budget atomic.Int64 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.count(cmd); return next(ctx, cmd) }
}
func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.count(cmds...); return next(ctx, cmds) }
}

// count counts one round trip of cmds: the budget's when its first
// command names a budget key.
func (h *roundTrips) count(cmds ...redis.Cmder) {
	if len(cmds) == 0 {
		return
	}
	for _, a := range cmds[0].Args()[1:] {
		if k, ok := a.(string); ok && (strings.HasPrefix(k, keys.RateBudget("")) || strings.HasPrefix(k, keys.RatePace(""))) {
			h.budget.Add(1)
			return
		}
	}
	h.n.Add(1)
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
	fmt.Println("| path | concurrency | claims/s | Redis round trips/claim | rate-limit budget reads/claim | Redis cmds/claim (incl. inside Lua) | tracker API calls/claim | outcomes | Redis cmds by kind |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---|---|")
	res := &ClaimResult{}
	for _, r := range []struct {
		path string
		c    int
	}{{"Claim", 1}, {"Claim", 16}, {"ClaimSnapshot", 1}, {"ClaimSnapshot", 16}} {
		c := r.c
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
		row, err := b.claimRun(ctx, w, rt, r.path, c, total)
		w.close()
		_ = rdb.Close()
		if err != nil {
			return err
		}
		res.Rows = append(res.Rows, row)
		fmt.Printf("| %s | %d | %.0f | %.2f | %.2f | %.2f | %.2f | %v | %s |\n", row.Path, row.Concurrency, row.ClaimsPerSec, row.RoundTripsPer, row.BudgetTripsPer, row.RedisCmdsPer,
			row.APICallsPer, row.Outcomes, row.RedisCmdsByKind)
	}
	b.res.Claim = res
	fmt.Println()
	return nil
}

// claimRun claims tickets 1..total, the first claimWarmup uncounted, c at
// a time, by path: "Claim" (Claim, reading the ticket under the lock) or
// "ClaimSnapshot" (the webhook's and the poll's path: the ticket as a
// listing shows it, its refusal record weighed).
func (b *bench) claimRun(ctx context.Context, w *world, rt *roundTrips, path string, c, total int) (ClaimRow, error) {
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
					rf := ref("claim", "acme/claim", n)
					var r claim.Result
					var err error
					if path == "Claim" {
						r, err = w.claims.Claim(ctx, rf, lifecycle.SourcePoll, 1)
					} else {
						r, err = w.claims.ClaimSnapshot(ctx, &platforms.Ticket{Ref: rf, Open: true, Labels: []string{trigger}}, lifecycle.SourcePoll, 1, "", time.Time{})
					}
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
	rt0, bt0 := rt.n.Load(), rt.budget.Load()
	outcomes := map[string]int{}
	start := time.Now()
	if err := claim(claimWarmup, total, outcomes); err != nil {
		return ClaimRow{}, err
	}
	el := time.Since(start)
	n := float64(total - claimWarmup)
	rts, bts := rt.n.Load()-rt0, rt.budget.Load()-bt0
	cmds, byKind, err := cnt.stop(ctx)
	if err != nil {
		return ClaimRow{}, err
	}
	_, api, _ := w.apiDelta(before)
	return ClaimRow{Path: path, Concurrency: c, Claims: int(n), ClaimsPerSec: n / el.Seconds(), RoundTripsPer: float64(rts) / n, BudgetTripsPer: float64(bts) / n,
		RedisCmdsPer: float64(cmds) / n, APICallsPer: float64(api) / n, Outcomes: outcomes, RedisCmdsByKind: topCommands(byKind, n, 8)}, nil
}

var _ = net.JoinHostPort
