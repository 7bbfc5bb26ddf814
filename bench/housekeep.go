package main

import (
	"context"
	"fmt"
	"time"

	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// HousekeepResult is one cycle kind at one ticket count.
type HousekeepResult struct {
	Tickets        int            `json:"tickets"`
	Cycle          string         `json:"cycle"`
	Ms             float64        `json:"ms_per_cycle"`
	SimMs          float64        `json:"sim_ms_per_cycle"`    // inside trackersim's handler
	DaemonMs       float64        `json:"daemon_ms_per_cycle"` // Ms - SimMs`
	RedisCmds      float64        `json:"redis_cmds_per_cycle"`
	RoundTrips     float64        `json:"redis_round_trips_per_cycle"`
	APICalls       float64        `json:"api_calls_per_cycle"`
	NotModified    float64        `json:"not_modified_304_per_cycle"`
	CallsByKind    map[string]int `json:"calls_by_kind_total"`
	SetupSeconds   float64        `json:"setup_seconds"`
	InProgressRuns int            `json:"in_progress_runs"`
}

const hkCycles = 3

func (b *bench) housekeeping(ctx context.Context, maxN int) error {
	fmt.Println("## 5. Housekeeping at scale: one GitHub project, tickets spread 40 % Pending, 15 % Enqueued (queued), 15 % InProgress (live run),")
	fmt.Printf("20 %% Done, 10 %% Failed; a steady state, so no repair writes. Mean of %d cycles after one warm-up cycle.\n", hkCycles)
	fmt.Println("Fast = StaleJobDetector.FastCycle + EnqueuedReconciler.FastCycle (Redis only); slow = both SlowCycles (tracker lists).")
	fmt.Println()
	fmt.Println("Time/cycle is split into the sim's (inside trackersim's handler, listing and filtering its issues) and the daemon's (the rest).")
	fmt.Println()
	fmt.Println("| tickets | cycle | time/cycle | of which sim | of which daemon | Redis cmds/cycle | Redis round trips/cycle | API calls/cycle | of which 304 (free) | by kind |")
	fmt.Println("|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, n := range []int{1000, 10000, 100000} {
		if n > maxN {
			b.res.Skipped = append(b.res.Skipped, fmt.Sprintf("housekeeping at %d tickets: above -hk-max", n))
			continue
		}
		if err := b.flush(ctx); err != nil {
			return err
		}
		if err := b.housekeepAt(ctx, n); err != nil {
			return err
		}
	}
	fmt.Println()
	return nil
}

func (b *bench) housekeepAt(ctx context.Context, n int) error {
	rdb, rt := b.countedClient()
	defer rdb.Close()
	w, err := newWorld(rdb, projectSpec{name: "hk", repo: "acme/hk", command: []string{"true"}})
	if err != nil {
		return err
	}
	defer w.close()
	setup := time.Now()
	const live = "live"
	if err := rdb.Set(ctx, keys.Instance(live), "1", time.Hour).Err(); err != nil {
		return err
	}
	lb := w.labels
	runs := 0
	pipe := rdb.Pipeline()
	for i := range n {
		var labels []string
		state := lifecycle.Pending
		switch i % 20 {
		case 8, 9, 10:
			state = lifecycle.Enqueued
		case 11, 12, 13:
			state = lifecycle.InProgress
		case 14, 15, 16, 17:
			state = lifecycle.Done
		case 18, 19:
			state = lifecycle.Failed
		}
		labels = append(labels, trigger)
		if state != lifecycle.Pending {
			labels = append(labels, lb.Label(state))
		}
		num := w.sim.CreateIssue("acme/hk", fmt.Sprintf("t%d", i), "", labels...)
		r := ref("hk", "acme/hk", num)
		switch state {
		case lifecycle.Enqueued:
			pipe.RPush(ctx, keys.Queue(), lifecycle.PipelineRequest{ID: fmt.Sprintf("r%d", i), Ref: r, Source: lifecycle.SourcePoll, Attempt: 1, EnqueuedAt: time.Now()}.Encode())
		case lifecycle.InProgress:
			if _, err := pipe.Exec(ctx); err != nil {
				return err
			}
			runs++
			if _, err := runstate.Take(ctx, rdb, runstate.Record{Ref: r, Instance: live, Token: fmt.Sprintf("tok%d", i), Attempt: 1, Started: time.Now()}, runstate.TakeArgs{TTL: time.Hour, Now: time.Now()}); err != nil {
				return err
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	setupS := time.Since(setup).Seconds()
	stale := housekeeping.NewStaleJobDetector(rdb, w.claims, housekeeping.StaleJobDetectorConfig{})
	recon := housekeeping.NewEnqueuedReconciler(rdb, w.q, w.claims, housekeeping.EnqueuedReconcilerConfig{})
	for _, cyc := range []struct {
		name string
		fn   func(context.Context) error
	}{
		{"fast", func(ctx context.Context) error {
			if err := stale.FastCycle(ctx); err != nil {
				return err
			}
			return recon.FastCycle(ctx)
		}},
		{"slow", func(ctx context.Context) error {
			if err := stale.SlowCycle(ctx); err != nil {
				return err
			}
			return recon.SlowCycle(ctx)
		}},
	} {
		if err := cyc.fn(ctx); err != nil { // warm-up
			return fmt.Errorf("%s cycle: %w", cyc.name, err)
		}
		cnt, err := startCount(ctx, b.rdb)
		if err != nil {
			return err
		}
		before := w.apiSnap()
		rt0 := rt.n.Load()
		sim0 := w.simNanos.Load()
		start := time.Now()
		for range hkCycles {
			if err := cyc.fn(ctx); err != nil {
				return fmt.Errorf("%s cycle: %w", cyc.name, err)
			}
		}
		el := time.Since(start)
		simEl := time.Duration(w.simNanos.Load() - sim0)
		cmds, _, err := cnt.stop(ctx)
		if err != nil {
			return err
		}
		d, api, nm := w.apiDelta(before)
		k := float64(hkCycles)
		r := HousekeepResult{Tickets: n, Cycle: cyc.name, Ms: msf(el) / k, SimMs: msf(simEl) / k, DaemonMs: msf(el-simEl) / k, RedisCmds: float64(cmds) / k,
			RoundTrips: float64(rt.n.Load()-rt0) / k, APICalls: float64(api) / k, NotModified: float64(nm) / k,
			CallsByKind: d, SetupSeconds: setupS, InProgressRuns: runs}
		b.res.Housekeeping = append(b.res.Housekeeping, r)
		fmt.Printf("| %d | %s | %.1f ms | %.1f ms | %.1f ms | %.0f | %.0f | %.1f | %.1f | %s |\n", n, r.Cycle, r.Ms, r.SimMs, r.DaemonMs, r.RedisCmds, r.RoundTrips, r.APICalls, r.NotModified, kinds(d, k))
	}
	return nil
}
