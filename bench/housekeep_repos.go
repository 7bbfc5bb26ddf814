package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/budget"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/azuredevops"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/platforms/gitlab"
	"github.com/agentsmithd/agentsmithd/platforms/jira"
)

// RepoScaleResult is one slow cycle at one repository count, listing per
// project (before platforms.Searcher) or by search per owner (after).
type RepoScaleResult struct {
	Platform string `json:"platform"`
	Repos    int    `json:"repos"`
	Listing  string `json:"listing"` // "per project" or "search"
	// Calls are all API requests of one slow cycle (StaleJobDetector,
	// EnqueuedReconciler, LabelRepairer, TriggerSweeper), 304s included.
	Calls       float64 `json:"api_calls_per_slow_cycle"`
	NotModified float64 `json:"not_modified_304_per_slow_cycle"`
	// Searches are the cross-project listings: GitHub's issue search,
	// GitLab's group issues, Jira's JQL over the site.
	Searches float64 `json:"search_calls_per_slow_cycle"`
	// Core is what the token's main quota pays (GitHub's core 5,000/h):
	// requests that are not 304s and, on GitHub, not searches, which
	// have their own quota. GitLab and Jira searches spend the main one.
	Core        float64        `json:"core_quota_calls_per_slow_cycle"`
	Ms          float64        `json:"ms_per_slow_cycle"`
	SimMs       float64        `json:"sim_ms_per_slow_cycle"`
	CallsByKind map[string]int `json:"calls_by_kind_total"`
}

// listOnly hides a tracker's optional capabilities (platforms.Searcher
// among them): the housekeeping then lists it per project, the path a
// tracker without search takes.
type listOnly struct{ platforms.Tracker }

func (b *bench) housekeepingRepos(ctx context.Context) error {
	fmt.Println("## 5b. Housekeeping across repositories: N repositories (GitHub), projects in one group (GitLab), Jira")
	fmt.Println("projects of one site or Azure DevOps projects of one organisation, one token, one ticket each, states cycling")
	fmt.Println("Pending, Enqueued (queued), InProgress (live run), Done;")
	fmt.Println("a steady state, so no repair writes.")
	fmt.Printf("One slow cycle = StaleJobDetector.SlowCycle + EnqueuedReconciler.SlowCycle + LabelRepairer.Cycle + TriggerSweeper.Sweep\n(webhook-only projects); mean of %d after a warm-up.\n", hkCycles)
	fmt.Println("Search calls are the cross-project listings (GitHub issue search, GitLab group issues, Jira JQL over the site,")
	fmt.Println("Azure DevOps organisation-level WIQL).")
	fmt.Println("Quota calls = requests the token's main quota pays: not 304 and, on GitHub, not search (its own 30/min quota).")
	fmt.Println()
	fmt.Println("| platform | repositories | listing | API calls/slow cycle | of which 304 (free) | search calls | quota calls | time/cycle | of which sim | by kind |")
	fmt.Println("|---|---:|---|---:|---:|---:|---:|---:|---:|---|")
	for _, plat := range []string{github.Platform, gitlab.Platform, jira.Platform, azuredevops.Platform} {
		modes := []string{listPerProject, listSearch}
		if plat == jira.Platform {
			modes = append(modes, listJQLScope)
		}
		for _, n := range []int{10, 100, 1000} {
			for _, mode := range modes {
				if err := b.flush(ctx); err != nil {
					return err
				}
				if err := b.housekeepReposAt(ctx, plat, n, mode); err != nil {
					return err
				}
			}
		}
	}
	fmt.Println()
	return nil
}

// searchKinds are the sim's Stats.Calls keys of each platform's
// cross-project listing.
var searchKinds = map[string][]string{
	github.Platform: {"GET /search/issues"},
	gitlab.Platform: {"GET /gitlab/api/v4/groups/{id}/issues"},
	jira.Platform:   {"GET /jira/rest/api/{v}/search/jql", "POST /jira/rest/api/{v}/search/jql", "GET /jira/rest/api/{v}/search"},
	// The organisation-level query; its batch reads (POST
	// {org}/_apis/wit/workItemsBatch) are counted with the API calls.
	azuredevops.Platform: {"POST /ado/{org}/_apis/wit/wiql"},
}

// repoName is the i-th repository of one owner as the platform names it:
// acme/rI on GitHub, a project in the acme group on GitLab, a project key
// on Jira.
func repoName(platform string, i int) string {
	switch platform {
	case gitlab.Platform:
		return fmt.Sprintf("acme/platform/r%d", i)
	case jira.Platform:
		return fmt.Sprintf("R%d", i)
	case azuredevops.Platform:
		return fmt.Sprintf("acmeorg/r%d", i)
	}
	return fmt.Sprintf("acme/r%d", i)
}

// The listing modes of section 5b: one list call per project, the
// platform's search across them, or (Jira) one project that is a JQL scope
// over all of them.
const (
	listPerProject = "per project"
	listSearch     = "search"
	listJQLScope   = "jql scope"
)

// benchScope is the JQL scope of the jql-scope rows: every issue of the
// site's component Payments, whatever its project.
const benchScope = "component = Payments"

func (b *bench) housekeepReposAt(ctx context.Context, platform string, n int, mode string) error {
	rdb, _ := b.countedClient()
	defer rdb.Close()
	specs := make([]projectSpec, n)
	for i := range specs {
		specs[i] = projectSpec{name: fmt.Sprintf("r%d", i), repo: repoName(platform, i), command: []string{"true"}, platform: platform}
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
	w.sim.SetJiraSearchLag(0)
	listing, search := mode, mode != listPerProject
	switch mode {
	case listPerProject:
		for _, p := range w.projects {
			p.Tracker = listOnly{p.Tracker}
		}
	case listJQLScope:
		// One project instead of n: the claim service reads the same map.
		hc := trackerhttp.NewClientWith(trackerhttp.Options{Writer: "bench", RateLimits: trackerhttp.JiraRateLimits, Budget: budget.New(rdb, clock)})
		tr, err := jira.New(jira.Options{BaseURL: w.simSrv.URL + "/jira/", JQL: benchScope, Project: "scope", Token: "t",
			Email: "bot@acme.example", Locker: redislock.Locker{RDB: rdb}, HTTPClient: hc})
		if err != nil {
			return err
		}
		for name := range w.projects {
			delete(w.projects, name)
		}
		w.projects["scope"] = &lifecycle.Project{Name: "scope", Platform: jira.Platform, Tracker: tr, TriggerLabel: trigger,
			Pipeline: lifecycle.Pipeline{Command: []string{"true"}, MaxAttempts: 1}}
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
		r := refOn(sp, num)
		if mode == listJQLScope {
			if err := w.sim.SetComponents(sp.repo, num, "Payments"); err != nil {
				return err
			}
			r.Project = "scope"
		}
		switch state {
		case lifecycle.Enqueued:
			req := lifecycle.PipelineRequest{ID: fmt.Sprintf("r%d", i), Ref: r, Source: lifecycle.SourcePoll, Attempt: 1, EnqueuedAt: time.Now()}
			if err := rdb.RPush(ctx, keys.Queue(), req.Encode()).Err(); err != nil {
				return err
			}
		case lifecycle.InProgress:
			rec := runstate.Record{Ref: r, Instance: live, Token: fmt.Sprintf("tok%d", i), Attempt: 1, Started: time.Now()}
			if _, err := runstate.Take(ctx, rdb, rec, runstate.TakeArgs{TTL: time.Hour, Now: time.Now()}); err != nil {
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
	sim0 := w.simNanos.Load()
	start := time.Now()
	for range hkCycles {
		if err := slow(ctx); err != nil {
			return fmt.Errorf("slow cycle: %w", err)
		}
	}
	el := time.Since(start)
	simEl := time.Duration(w.simNanos.Load() - sim0)
	d, api, nm := w.apiDelta(before)
	k := float64(hkCycles)
	searches := 0
	if search {
		for _, kind := range searchKinds[platform] {
			searches += d[kind]
		}
	}
	quota := api - nm
	if platform == github.Platform {
		quota -= searches
	}
	r := RepoScaleResult{Platform: platform, Repos: n, Listing: listing, Calls: float64(api) / k, NotModified: float64(nm) / k,
		Searches: float64(searches) / k, Core: float64(quota) / k, Ms: msf(el) / k, SimMs: msf(simEl) / k, CallsByKind: d}
	b.res.HousekeepingRepos = append(b.res.HousekeepingRepos, r)
	fmt.Printf("| %s | %d | %s | %.1f | %.1f | %.1f | %.1f | %.1f ms | %.1f ms | %s |\n", platform, n, listing, r.Calls, r.NotModified, r.Searches, r.Core, r.Ms, r.SimMs, kinds(d, k))
	return nil
}
