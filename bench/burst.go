package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/budget"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp/trackerhttptest"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// BurstResult is one row of section 2b: a burst of tickets triggered at
// once on one GitHub token, run to Done by two replicas, against
// trackersim enforcing GitHub's secondary limits.
type BurstResult struct {
	API string `json:"api"`
	// Reading is which writes count toward the content creation limit, in
	// the pacing and in the sim alike: "default" (label writes do not,
	// GitHubSecondary) or "labels-as-content" (every write does,
	// github.pace_labels_as_content).
	Reading string `json:"reading"`
	Paced   bool   `json:"paced"`
	Tickets int    `json:"tickets"`
	// Refused are the sim's secondary-limit refusals (REST 403s and
	// GraphQL "submitted too quickly" mutations).
	Refused int `json:"secondary_refused"`
	// Failed are transitions that came back with an error and were tried
	// again in a later round, as the poller and repairs would.
	Failed int `json:"failed_transitions"`
	// Rounds are the passes over the unfinished tickets until all were
	// Done or burstMaxDrain of GitHub time had passed.
	Rounds int `json:"rounds"`
	// Done are the tickets Done at the end.
	Done int `json:"done"`
	// Drain is GitHub time (the sim's clock) from the burst to the last
	// ticket Done.
	Drain time.Duration `json:"drain_ns"`
	// Writes are the label write requests the sim answered.
	Writes int `json:"write_requests"`
	// RedisPerWrite are Redis round trips of the transport (shared budget
	// and pacing) per write request.
	RedisPerWrite float64       `json:"redis_round_trips_per_write"`
	Wall          time.Duration `json:"wall_ns"`
}

const (
	burstTickets  = 300
	burstMaxDrain = 8 * time.Hour
	// burstUnpacedSpan is how much GitHub time an unpaced burst is run
	// for: enough to count its refusals; its refusals and holds (1 minute
	// doubling to 16) make a full drain too slow to run in the bench.
	burstUnpacedSpan = 10 * time.Minute
	// The readings of which writes count toward the content creation
	// limit (BurstResult.Reading).
	burstDefault         = "default"
	burstLabelsAsContent = "labels-as-content"
)

// burst is section 2b.
func (b *bench) burst(ctx context.Context) error {
	fmt.Printf("## 2b. Burst: %d GitHub tickets triggered at once, two replicas on one token, run to Done against trackersim enforcing GitHub's secondary limits\n\n", burstTickets)
	fmt.Printf("| API | content reading | pacing | secondary-limit refusals | failed transitions (retried next round) | rounds | tickets Done | GitHub time to drain | write requests | Redis round trips/write | wall |\n")
	fmt.Printf("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, api := range []string{github.APIREST, github.APIGraphQL} {
		for _, reading := range []string{burstDefault, burstLabelsAsContent} {
			for _, paced := range []bool{true, false} {
				r, err := b.burstRun(ctx, api, reading, paced)
				if err != nil {
					return fmt.Errorf("burst %s %s paced=%v: %w", api, reading, paced, err)
				}
				b.res.Burst = append(b.res.Burst, r)
				onOff := "off"
				if paced {
					onOff = "on"
				}
				drain := r.Drain.Round(time.Minute).String()
				if r.Done < r.Tickets {
					drain = "not drained in " + drain
				}
				fmt.Printf("| %s | %s | %s | %d | %d | %d | %d | %s | %d | %.2f | %s |\n", api, reading, onOff, r.Refused, r.Failed, r.Rounds,
					r.Done, drain, r.Writes, r.RedisPerWrite, r.Wall.Round(time.Millisecond))
			}
		}
	}
	fmt.Println()
	return nil
}

// burstRun triggers burstTickets tickets and moves each pending →
// enqueued → in-progress → done (a Get before every transition, as the
// claim and the consumer read), replicas taking turns per ticket. A
// transition that fails is tried again in the next round. The clock is
// fake and shared by the sim and both transports: a wait passes at once,
// and the drain is GitHub time. reading is how both the pacing and the sim
// count label writes.
func (b *bench) burstRun(ctx context.Context, api, reading string, paced bool) (BurstResult, error) {
	res := BurstResult{API: api, Reading: reading, Paced: paced, Tickets: burstTickets}
	strict := reading == burstLabelsAsContent
	limits := trackerhttp.GitHubRateLimits
	if strict {
		limits = trackerhttp.GitHubRateLimitsLabelsAsContent
	}
	start := time.Unix(1_700_000_000, 0)
	clock := trackerhttptest.NewClock(start)
	const token = "burst-token"
	sim := trackersim.New(trackersim.Options{Tokens: []string{token}, Clock: clock.Now, GitHubSecondaryLimits: true, GitHubLabelsAsContent: strict})
	defer sim.Close()
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()
	const repo = "acme/burst"
	states := []string{"agent-smith:pending", "agent-smith:enqueued", "agent-smith:in-progress", "agent-smith:done"}
	rc, rt := b.countedClient()
	defer rc.Close()
	if err := rc.FlushAll(ctx).Err(); err != nil {
		return res, err
	}
	share := budget.New(rc, clock.Now)
	replica := func() (*github.Tracker, error) {
		// The daemon's transport but for the clock, and MaxWait long
		// enough for the hourly window: the daemon fails such a wait
		// (ErrRateLimited) and its poller tries again later.
		opts := trackerhttp.Options{Clock: clock.Now, Sleep: clock.Sleep, RateLimits: limits,
			Budget: share, MaxWait: 2 * time.Hour, PaceSecondary: paced}
		hc := &http.Client{Transport: trackerhttp.NewTransport(nil, opts), CheckRedirect: trackerhttp.CheckRedirect}
		return github.New(github.Options{BaseURL: srv.URL + "/github/", Repo: repo, Token: token, HTTPClient: hc, API: api})
	}
	var replicas [2]*github.Tracker
	for i := range replicas {
		tr, err := replica()
		if err != nil {
			return res, err
		}
		replicas[i] = tr
	}
	type ticket struct {
		ref  platforms.Ref
		step int // index into states of the current label
	}
	tickets := make([]*ticket, burstTickets)
	for i := range tickets {
		n := sim.CreateIssue(repo, fmt.Sprintf("burst %d", i), "", "agent-smith", states[0])
		tickets[i] = &ticket{ref: platforms.Ref{Platform: github.Platform, ID: github.FormatID(repo, n)}}
	}
	for _, l := range states[1:] {
		if err := sim.CreateLabel(repo, l); err != nil {
			return res, err
		}
	}
	t0 := time.Now()
	left := len(tickets)
	limit := burstMaxDrain
	if !paced {
		limit = burstUnpacedSpan
	}
	for left > 0 && clock.Now().Sub(start) < limit {
		res.Rounds++
		for i, tk := range tickets {
			for tk.step < len(states)-1 {
				tr := replicas[i%2]
				got, err := tr.Get(ctx, tk.ref)
				if err == nil {
					_, err = tr.Relabel(ctx, got, []string{states[tk.step]}, states[tk.step+1])
				}
				if err != nil {
					res.Failed++
					break
				}
				tk.step++
				if tk.step == len(states)-1 {
					left--
				}
			}
		}
	}
	res.Wall = time.Since(t0)
	res.Done = len(tickets) - left
	res.Drain = clock.Now().Sub(start)
	st := sim.Stats()
	res.Refused = st.SecondaryRefused
	for call, n := range st.Calls {
		if !strings.HasPrefix(call, "GET ") {
			res.Writes += n
		}
	}
	if res.Writes > 0 {
		res.RedisPerWrite = float64(rt.n.Load()) / float64(res.Writes)
	}
	return res, nil
}
