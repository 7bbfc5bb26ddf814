package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/poller"
	"github.com/agentsmithd/agentsmithd/platforms/azuredevops"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/platforms/gitlab"
	"github.com/agentsmithd/agentsmithd/platforms/jira"
)

// LifecycleResult is one platform × topology × trigger × outcome scenario.
type LifecycleResult struct {
	Platform        string         `json:"platform"`
	Scenario        string         `json:"scenario"`
	Tickets         int            `json:"tickets"`
	APICallsPerTkt  float64        `json:"api_calls_per_ticket"`
	NotModifiedPer  float64        `json:"not_modified_304_per_ticket"`
	RateLimitedPer  float64        `json:"rate_limited_calls_per_ticket"`
	ByBudget        map[string]int `json:"rate_limited_calls_by_budget_total"`
	ByKind          map[string]int `json:"calls_by_kind_total"`
	RedisCmdsPerTkt float64        `json:"redis_cmds_per_ticket"`
	InProgressP50Ms float64        `json:"label_to_in_progress_p50_ms"`
	InProgressP99Ms float64        `json:"label_to_in_progress_p99_ms"`
	TerminalP50Ms   float64        `json:"label_to_terminal_p50_ms"`
	TerminalP99Ms   float64        `json:"label_to_terminal_p99_ms"`
}

const (
	lifecycleTickets = 100
	lifecycleWarmup  = 5
)

// benchPlatform is one tracker as section 2 measures it: its projects'
// repositories and the budget each rate-limited call of it spends.
type benchPlatform struct {
	name     string // the -platforms name and the table's
	platform string
	jiraDC   bool
	// githubAPI is GitHub's label write path (projectSpec.githubAPI).
	githubAPI string
	// repo names the project's repository from a lower-case base.
	repo func(base string) string
	// budget names the documented limit a call of kind (the sim's Stats
	// key, not a 304) counts against; see results.md section 8.
	budget func(kind string) string
}

// lifecyclePlatforms are every platform section 2 measures, in order.
var lifecyclePlatforms = []benchPlatform{
	{name: "github", platform: github.Platform, repo: func(b string) string { return "acme/" + b },
		budget: func(kind string) string {
			if strings.Contains(kind, "/search/") {
				return "search"
			}
			return "core"
		}},
	{name: "github-graphql", platform: github.Platform, githubAPI: github.APIGraphQL, repo: func(b string) string { return "acme/" + b },
		budget: func(kind string) string {
			switch {
			case strings.Contains(kind, "/search/"):
				return "search"
			case strings.Contains(kind, "graphql"):
				return "GraphQL"
			}
			return "core"
		}},
	{name: "gitlab", platform: gitlab.Platform, repo: func(b string) string { return "acme/platform/" + b },
		budget: func(string) string { return "API per user" }},
	{name: "azuredevops", platform: azuredevops.Platform, repo: func(b string) string { return "acmeorg/" + b },
		budget: func(string) string { return "TSTU" }},
	{name: "jira-cloud", platform: jira.Platform, repo: strings.ToUpper,
		budget: func(string) string { return "burst/s" }},
	{name: "jira-dc", platform: jira.Platform, jiraDC: true, repo: strings.ToUpper,
		budget: func(string) string { return "token bucket" }},
}

// lifecycleFor returns the platforms named in the comma-separated list
// ("" or "all": every one).
func lifecycleFor(list string) ([]benchPlatform, error) {
	if list == "" || list == "all" {
		return lifecyclePlatforms, nil
	}
	var out []benchPlatform
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, p := range lifecyclePlatforms {
			if p.name == name {
				out, found = append(out, p), true
			}
		}
		if !found {
			return nil, fmt.Errorf("-platforms: unknown platform %q (github, github-graphql, gitlab, azuredevops, jira-cloud, jira-dc)", name)
		}
	}
	return out, nil
}

func (b *bench) lifecycle(ctx context.Context) error {
	fmt.Printf("## 2. Lifecycle cost: one ticket at a time, trigger label → terminal state (%d tickets, %d warm-up excluded)\n\n", lifecycleTickets, lifecycleWarmup)
	fmt.Println("Each platform's real tracker (its SDK over pkg/trackerhttp with the shared budget) against trackersim; claim service,")
	fmt.Println("executor (pipeline `true` / `false`) and receiver in one process, or the executor on its own tracker clients")
	fmt.Println("(a consumer on another replica: no shared HTTP cache). Webhooks are delivered by trackersim, signed or")
	fmt.Println("authenticated as each receiver requires. Poll latency is from the label to the end of the ticket, with PollOnce")
	fmt.Println("called right after the label (no poll interval; the sim's search lag set to 0).")
	fmt.Println("Rate-limited calls are all calls but 304s; \"by budget\" names the documented limit that pays them (section 8).")
	fmt.Println()
	fmt.Println("| platform | scenario | API calls/ticket | of which 304 (free) | rate-limited calls/ticket | by budget (per ticket) | by kind (per ticket) | Redis cmds/ticket | label→InProgress p50 / p99 | label→terminal p50 / p99 |")
	fmt.Println("|---|---|---:|---:|---:|---|---|---:|---|---|")
	for _, p := range b.lcPlatforms {
		for _, split := range []bool{false, true} {
			if err := b.flush(ctx); err != nil {
				return err
			}
			if err := b.lifecycleScenarios(ctx, p, split); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
		}
	}
	fmt.Println()
	return nil
}

// lifecycleScenarios runs the scenarios of one platform with claim and
// executor sharing tracker clients (one replica with every role), or,
// split, on separate clients (receiver and consumer on different
// replicas: no shared HTTP cache).
func (b *bench) lifecycleScenarios(ctx context.Context, p benchPlatform, split bool) error {
	spec := func(name string, command string, webhook bool) projectSpec {
		return projectSpec{name: name, repo: p.repo(name), command: []string{command}, webhook: webhook, platform: p.platform, jiraDC: p.jiraDC, githubAPI: p.githubAPI}
	}
	hook, hookFail, poll, pollFail := spec("hook", "true", true), spec("hookfail", "false", true), spec("poll", "true", false), spec("pollfail", "false", false)
	w, err := newWorld(b.rdb, hook, hookFail, poll, pollFail)
	if err != nil {
		return err
	}
	defer w.close()
	// PollOnce right after the label must find it: no indexing lag.
	w.sim.SetGitHubSearchLag(0)
	w.sim.SetJiraSearchLag(0)
	ex := w.executor(4, split)
	runCtx, cancel := context.WithCancel(ctx)
	exDone := make(chan error, 1)
	go func() { exDone <- ex.Run(runCtx) }()
	defer func() { cancel(); <-exDone }()
	poller := poller.NewPoller(w.claims, zap.NewNop())

	type scenario struct {
		name string
		sp   projectSpec
		poll bool
		want lifecycle.State
	}
	scenarios := []scenario{
		{"webhook → Done", hook, false, lifecycle.Done},
		{"webhook → Failed", hookFail, false, lifecycle.Failed},
		{"poll → Done", poll, true, lifecycle.Done},
		{"poll → Failed", pollFail, true, lifecycle.Failed},
	}
	if split {
		scenarios = []scenario{
			{"webhook → Done, consumer on another replica", hook, false, lifecycle.Done},
			{"poll → Done, consumer on another replica", poll, true, lifecycle.Done},
		}
	}
	for _, sc := range scenarios {
		repo := sc.sp.repo
		nums := make([]int, lifecycleWarmup+lifecycleTickets)
		for i := range nums {
			nums[i] = w.sim.CreateIssue(repo, fmt.Sprintf("ticket %d", i), "bench")
		}
		if err := w.sim.WaitIdle(ctx); err != nil {
			return err
		}
		var inProg, term []time.Duration
		var before apiStats
		var cnt *cmdCounter
		for i, n := range nums {
			if i == lifecycleWarmup {
				before = w.apiSnap()
				if cnt, err = startCount(ctx, b.rdb); err != nil {
					return err
				}
			}
			t0 := time.Now()
			if err := w.sim.AddLabels(repo, n, trigger); err != nil {
				return err
			}
			if sc.poll {
				if _, err := poller.PollOnce(ctx, sc.sp.name); err != nil {
					return err
				}
			}
			var t1 time.Duration
			deadline := time.Now().Add(30 * time.Second)
			for {
				s := w.state(repo, n)
				if t1 == 0 && s >= lifecycle.InProgress {
					t1 = time.Since(t0)
				}
				if s == sc.want {
					break
				}
				if s.Terminal() || time.Now().After(deadline) {
					return fmt.Errorf("%s: ticket %d ended %s", sc.name, n, s)
				}
				time.Sleep(50 * time.Microsecond)
			}
			t2 := time.Since(t0)
			// Let the webhooks about the daemon's own writes land (they cost
			// no API call) before the next ticket.
			if err := w.sim.WaitIdle(ctx); err != nil {
				return err
			}
			if i >= lifecycleWarmup {
				inProg, term = append(inProg, t1), append(term, t2)
			}
		}
		// The executor releases its run after the last write; give it a moment.
		time.Sleep(100 * time.Millisecond)
		d, total, nm := w.apiDelta(before)
		rc, _, err := cnt.stop(ctx)
		if err != nil {
			return err
		}
		budgets := byBudget(p, d, nm)
		n := float64(lifecycleTickets)
		r := LifecycleResult{Platform: p.name, Scenario: sc.name, Tickets: lifecycleTickets, APICallsPerTkt: float64(total) / n,
			NotModifiedPer: float64(nm) / n, RateLimitedPer: float64(total-nm) / n, ByBudget: budgets, ByKind: d, RedisCmdsPerTkt: float64(rc) / n,
			InProgressP50Ms: msf(percentile(inProg, .5)), InProgressP99Ms: msf(percentile(inProg, .99)),
			TerminalP50Ms: msf(percentile(term, .5)), TerminalP99Ms: msf(percentile(term, .99))}
		b.res.Lifecycle = append(b.res.Lifecycle, r)
		fmt.Printf("| %s | %s | %.2f | %.2f | **%.2f** | %s | %s | %.1f | %s / %s | %s / %s |\n", p.name, r.Scenario, r.APICallsPerTkt, r.NotModifiedPer,
			r.RateLimitedPer, perTicket(budgets, n, func(k string) string { return k }), kinds(d, n), r.RedisCmdsPerTkt,
			ms(percentile(inProg, .5)), ms(percentile(inProg, .99)), ms(percentile(term, .5)), ms(percentile(term, .99)))
	}
	return nil
}

// byBudget sums the rate-limited calls of d by the budget that pays them.
// The sim counts 304s apart from the call kinds; on GitHub they are
// conditional GETs of the core API, so they are taken off core.
func byBudget(p benchPlatform, d map[string]int, notModified int) map[string]int {
	out := map[string]int{}
	for k, v := range d {
		out[p.budget(k)] += v
	}
	if notModified > 0 {
		b := p.budget("GET")
		if out[b] -= notModified; out[b] <= 0 {
			delete(out, b)
		}
	}
	return out
}

// perTicket formats counts divided by n, keys sorted, each key named by
// name.
func perTicket(d map[string]int, n float64, name func(string) string) string {
	var ks []string
	for k := range d {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%s %.2f", name(k), float64(d[k])/n))
	}
	return strings.Join(parts, ", ")
}

func msf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
