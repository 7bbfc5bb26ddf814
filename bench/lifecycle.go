package main

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/poller"
)

// LifecycleResult is one trigger × outcome scenario.
type LifecycleResult struct {
	Scenario        string         `json:"scenario"`
	Tickets         int            `json:"tickets"`
	APICallsPerTkt  float64        `json:"api_calls_per_ticket"`
	NotModifiedPer  float64        `json:"not_modified_304_per_ticket"`
	RateLimitedPer  float64        `json:"rate_limited_calls_per_ticket"`
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

func (b *bench) lifecycle(ctx context.Context) error {
	if err := b.lifecycleRun(ctx, false); err != nil {
		return err
	}
	if err := b.flush(ctx); err != nil {
		return err
	}
	if err := b.lifecycleRun(ctx, true); err != nil {
		return err
	}
	fmt.Println()
	return nil
}

// lifecycleRun runs the scenarios with claim and executor sharing tracker
// clients (one replica with every role), or, split, on separate clients
// (receiver and consumer on different replicas: no shared HTTP cache).
func (b *bench) lifecycleRun(ctx context.Context, split bool) error {
	if split {
		return b.lifecycleScenarios(ctx, split)
	}
	fmt.Printf("## 2. Lifecycle cost: one ticket at a time, trigger label → terminal state (%d tickets, %d warm-up excluded)\n\n", lifecycleTickets, lifecycleWarmup)
	fmt.Println("GitHub tracker (go-github over pkg/trackerhttp) against trackersim in its default (GitHub's) If-Match mode; claim service,")
	fmt.Println("executor (pipeline `true` / `false`) and receiver share one process. A transition is one POST of the new label plus one")
	fmt.Println("DELETE per old lifecycle label (no If-Match: GitHub honours none on writes), so no write answer revalidates a later GET.")
	fmt.Println("Poll latency is from the label to the end of the ticket, with PollOnce called right after the label (no poll interval).")
	fmt.Println()
	fmt.Println("| scenario | API calls/ticket | of which 304 (free) | rate-limited calls/ticket | by kind (per ticket) | Redis cmds/ticket | label→InProgress p50 / p99 | label→terminal p50 / p99 |")
	fmt.Println("|---|---:|---:|---:|---|---:|---|---|")
	return b.lifecycleScenarios(ctx, split)
}

func (b *bench) lifecycleScenarios(ctx context.Context, split bool) error {
	w, err := newWorld(b.rdb,
		projectSpec{name: "hook", repo: "acme/hook", command: []string{"true"}, webhook: true},
		projectSpec{name: "hookfail", repo: "acme/hookfail", command: []string{"false"}, webhook: true},
		projectSpec{name: "poll", repo: "acme/poll", command: []string{"true"}},
		projectSpec{name: "pollfail", repo: "acme/pollfail", command: []string{"false"}},
	)
	if err != nil {
		return err
	}
	defer w.close()
	ex := w.executor(4, split)
	runCtx, cancel := context.WithCancel(ctx)
	exDone := make(chan error, 1)
	go func() { exDone <- ex.Run(runCtx) }()
	defer func() { cancel(); <-exDone }()
	poller := poller.NewPoller(w.claims, zap.NewNop())

	type scenario struct {
		name, project, repo string
		poll                bool
		want                lifecycle.State
	}
	scenarios := []scenario{
		{"webhook → Done", "hook", "acme/hook", false, lifecycle.Done},
		{"webhook → Failed", "hookfail", "acme/hookfail", false, lifecycle.Failed},
		{"poll → Done", "poll", "acme/poll", true, lifecycle.Done},
		{"poll → Failed", "pollfail", "acme/pollfail", true, lifecycle.Failed},
	}
	if split {
		scenarios = []scenario{
			{"webhook → Done, consumer on another replica", "hook", "acme/hook", false, lifecycle.Done},
			{"poll → Done, consumer on another replica", "poll", "acme/poll", true, lifecycle.Done},
		}
	}
	for _, sc := range scenarios {
		nums := make([]int, lifecycleWarmup+lifecycleTickets)
		for i := range nums {
			nums[i] = w.sim.CreateIssue(sc.repo, fmt.Sprintf("ticket %d", i), "bench")
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
			if err := w.sim.AddLabels(sc.repo, n, trigger); err != nil {
				return err
			}
			if sc.poll {
				if _, err := poller.PollOnce(ctx, sc.project); err != nil {
					return err
				}
			}
			var t1 time.Duration
			deadline := time.Now().Add(30 * time.Second)
			for {
				s := w.state(sc.repo, n)
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
		n := float64(lifecycleTickets)
		r := LifecycleResult{Scenario: sc.name, Tickets: lifecycleTickets, APICallsPerTkt: float64(total) / n,
			NotModifiedPer: float64(nm) / n, RateLimitedPer: float64(total-nm) / n, ByKind: d, RedisCmdsPerTkt: float64(rc) / n,
			InProgressP50Ms: msf(percentile(inProg, .5)), InProgressP99Ms: msf(percentile(inProg, .99)),
			TerminalP50Ms: msf(percentile(term, .5)), TerminalP99Ms: msf(percentile(term, .99))}
		b.res.Lifecycle = append(b.res.Lifecycle, r)
		fmt.Printf("| %s | %.2f | %.2f | **%.2f** | %s | %.1f | %s / %s | %s / %s |\n", r.Scenario, r.APICallsPerTkt, r.NotModifiedPer,
			r.RateLimitedPer, kinds(d, n), r.RedisCmdsPerTkt, ms(percentile(inProg, .5)), ms(percentile(inProg, .99)),
			ms(percentile(term, .5)), ms(percentile(term, .99)))
	}
	return nil
}

func msf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
