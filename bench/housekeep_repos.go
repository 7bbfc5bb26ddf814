package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// RepoScaleResult is one slow cycle at one repository count, listing per
// project (before platforms.Searcher) or by search per owner (after).
type RepoScaleResult struct {
	Repos   int    `json:"repos"`
	Listing string `json:"listing"` // "per project" or "search"
	// Calls are all API requests of one slow cycle (StaleJobDetector,
	// EnqueuedReconciler, LabelRepairer, TriggerSweeper), 304s included.
	Calls       float64 `json:"api_calls_per_slow_cycle"`
	NotModified float64 `json:"not_modified_304_per_slow_cycle"`
	Searches    float64 `json:"search_calls_per_slow_cycle"`
	// Core is what the core quota (5,000/h) pays: requests that are
	// neither 304 nor searches.
	Core        float64        `json:"core_quota_calls_per_slow_cycle"`
	Ms          float64        `json:"ms_per_slow_cycle"`
	CallsByKind map[string]int `json:"calls_by_kind_total"`
}

// listOnly hides a tracker's optional capabilities (platforms.Searcher
// among them): the housekeeping then lists it per project, as before
// search existed.
type listOnly struct{ platforms.Tracker }

func (b *bench) housekeepingRepos(ctx context.Context) error {
	fmt.Println("## 5b. Housekeeping across repositories: N GitHub repositories of one owner, one token, one ticket each,")
	fmt.Println("states cycling Pending, Enqueued (queued), InProgress (live run), Done; a steady state, so no repair writes.")
	fmt.Printf("One slow cycle = StaleJobDetector.SlowCycle + EnqueuedReconciler.SlowCycle + LabelRepairer.Cycle + TriggerSweeper.Sweep\n(webhook-only projects); mean of %d after a warm-up.\n", hkCycles)
	fmt.Println("Core = requests the 5,000/h core quota pays (not 304, not search); search requests pay the 30/min search quota.")
	fmt.Println()
	fmt.Println("| repositories | listing | API calls/slow cycle | of which 304 (free) | search calls | core-quota calls | time/cycle | by kind |")
	fmt.Println("|---:|---|---:|---:|---:|---:|---:|---|")
	for _, n := range []int{10, 100, 1000} {
		for _, search := range []bool{false, true} {
			if err := b.flush(ctx); err != nil {
				return err
			}
			if err := b.housekeepReposAt(ctx, n, search); err != nil {
				return err
			}
		}
	}
	fmt.Println()
	return nil
}

func (b *bench) housekeepReposAt(ctx context.Context, n int, search bool) error {
	rdb, _ := b.countedClient()
	defer rdb.Close()
	specs := make([]projectSpec, n)
	for i := range specs {
		specs[i] = projectSpec{name: fmt.Sprintf("r%d", i), repo: fmt.Sprintf("acme/r%d", i), command: []string{"true"}}
	}
	// The sim's clock moves a minute before each cycle, as the slow
	// interval (DefaultSlowInterval) does, so the 30-a-minute search limit
	// is measured as production meets it, not by cycles back to back.
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	tick := func() { mu.Lock(); now = now.Add(housekeeping.DefaultSlowInterval); mu.Unlock() }
	w, err := newWorldClock(rdb, clock, specs...)
	if err != nil {
		return err
	}
	defer w.close()
	w.sim.SetGitHubSearchLag(0)
	listing := "search"
	if !search {
		listing = "per project"
		for _, p := range w.projects {
			p.Tracker = listOnly{p.Tracker}
		}
	}
	const live = "live"
	if err := rdb.Set(ctx, keys.Instance(live), "1", time.Hour).Err(); err != nil {
		return err
	}
	for i, sp := range specs {
		state := []lifecycle.State{lifecycle.Pending, lifecycle.Enqueued, lifecycle.InProgress, lifecycle.Done}[i%4]
		// Pending ones are untriggered, so the TriggerSweeper finds
		// nothing to claim and the cycle stays a steady state.
		var labels []string
		if state != lifecycle.Pending {
			labels = append(labels, trigger, w.labels.Label(state))
		}
		num := w.sim.CreateIssue(sp.repo, "t", "", labels...)
		r := ref(sp.name, sp.repo, num)
		switch state {
		case lifecycle.Enqueued:
			req := lifecycle.PipelineRequest{ID: fmt.Sprintf("r%d", i), Ref: r, Source: lifecycle.SourcePoll, Attempt: 1, EnqueuedAt: time.Now()}
			if err := rdb.RPush(ctx, keys.Queue(), req.Encode()).Err(); err != nil {
				return err
			}
		case lifecycle.InProgress:
			rec := runstate.Record{Ref: r, Instance: live, Token: fmt.Sprintf("tok%d", i), Attempt: 1, Started: time.Now()}
			if _, _, err := runstate.Take(ctx, rdb, rec, time.Hour, time.Now(), nil); err != nil {
				return err
			}
		}
	}
	stale := housekeeping.NewStaleJobDetector(rdb, w.claims, housekeeping.StaleJobDetectorConfig{})
	recon := housekeeping.NewEnqueuedReconciler(rdb, w.q, w.claims, housekeeping.EnqueuedReconcilerConfig{})
	repair := housekeeping.NewLabelRepairer(rdb, w.claims, housekeeping.LabelRepairerConfig{})
	sweep := housekeeping.NewTriggerSweeper(w.claims, housekeeping.TriggerSweeperConfig{})
	slow := func(ctx context.Context) error {
		tick()
		if err := stale.SlowCycle(ctx); err != nil {
			return err
		}
		if err := recon.SlowCycle(ctx); err != nil {
			return err
		}
		if err := repair.Cycle(ctx); err != nil {
			return err
		}
		return sweep.Sweep(ctx)
	}
	if err := slow(ctx); err != nil { // warm-up: fills the ETag caches
		return fmt.Errorf("slow cycle: %w", err)
	}
	before := w.apiSnap()
	start := time.Now()
	for range hkCycles {
		if err := slow(ctx); err != nil {
			return fmt.Errorf("slow cycle: %w", err)
		}
	}
	el := time.Since(start)
	d, api, nm := w.apiDelta(before)
	k := float64(hkCycles)
	searches := d["GET /search/issues"]
	r := RepoScaleResult{Repos: n, Listing: listing, Calls: float64(api) / k, NotModified: float64(nm) / k,
		Searches: float64(searches) / k, Core: float64(api-nm-searches) / k, Ms: msf(el) / k, CallsByKind: d}
	b.res.HousekeepingRepos = append(b.res.HousekeepingRepos, r)
	fmt.Printf("| %d | %s | %.1f | %.1f | %.1f | %.1f | %.1f ms | %s |\n", n, listing, r.Calls, r.NotModified, r.Searches, r.Core, r.Ms, kinds(d, k))
	return nil
}
