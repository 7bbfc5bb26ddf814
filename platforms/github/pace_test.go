package github_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/pkg/budget"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp/trackerhttptest"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// A burst of triggered tickets, claimed by two replicas on one token
// (pending → enqueued: two REST writes, or one GraphQL request of two
// mutations, a ticket), draws no secondary-limit refusal when the replicas
// share the budget, under either reading of GitHub's content creation
// limit:
//
//   - the default one (label writes are no content, they pay points only):
//     paced by GitHubRateLimits, against a sim counting only creations, the
//     burst waits for the points a minute and is done well within the hour;
//     unshared, the same burst is refused on points;
//   - the strict one (github.pace_labels_as_content: every label write a
//     creation): paced by GitHubRateLimitsLabelsAsContent against a sim
//     counting label writes as content, 600 creations wait for 500 an hour;
//     the default pacing against that sim is refused, which is what the
//     strict mode is for. A GraphQL request of two mutations counts two
//     creations there: pacing must charge both.
//
// GraphQL's burst is larger than REST's: 300 requests of 5 points fit
// GraphQL's 2,000 a minute, and the unpaced row must pass it.
func TestBurstIsPacedBeforeTheSecondaryLimits(t *testing.T) {
	for _, api := range []string{github.APIREST, github.APIGraphQL} {
		tickets := map[string]int{github.APIREST: 300, github.APIGraphQL: 450}[api]
		for _, c := range []struct {
			pacing       string // "default" or "strict" (labels as content)
			strictSim    bool
			shared       bool
			wantRefusals bool
		}{
			{pacing: "default", shared: true},
			{pacing: "default", shared: false, wantRefusals: true},
			{pacing: "strict", strictSim: true, shared: true},
			{pacing: "default", strictSim: true, shared: true, wantRefusals: true},
		} {
			t.Run(fmt.Sprintf("api=%s/pacing=%s/strict_sim=%v/shared=%v", api, c.pacing, c.strictSim, c.shared), func(t *testing.T) {
				limits := trackerhttp.GitHubRateLimits
				if c.pacing == "strict" {
					limits = trackerhttp.GitHubRateLimitsLabelsAsContent
				}
				refused, failed, took := burst(t, tickets, api, limits, c.strictSim, c.shared)
				switch {
				case c.wantRefusals && refused == 0:
					t.Errorf("%s pacing, shared %v: no refusal; the sim does not enforce the limit this case is about", c.pacing, c.shared)
				case !c.wantRefusals && (refused != 0 || failed != 0):
					t.Errorf("paced burst: %d secondary-limit refusals, %d failed claims; want none", refused, failed)
				case c.wantRefusals:
				case c.strictSim && took < time.Hour:
					t.Errorf("%d content creations took %v, want over an hour (500 an hour)", 2*tickets, took)
				case !c.strictSim && (took < time.Minute || took >= time.Hour):
					t.Errorf("burst took %v: want the points a minute paced (over a minute) and no content wait (under an hour)", took)
				}
			})
		}
	}
}

// burst relabels tickets from two replicas writing through api, paced by
// limits through a shared budget when shared, against a sim counting label
// writes as content creation when strictSim; it returns the sim's
// secondary-limit refusals, the claims that failed and the GitHub time the
// burst took.
func burst(t *testing.T, tickets int, api string, limits trackerhttp.RateLimits, strictSim, shared bool) (refused, failed int, took time.Duration) {
	t.Helper()
	w := newBurstWorld(t, tickets, api, limits, strictSim, shared, 2*time.Hour)
	for i, ref := range w.refs {
		tk := &platforms.Ticket{Ref: ref, Labels: []string{"agent-smith:pending"}}
		if api == github.APIGraphQL {
			// The claim's read, which carries the issue's node id.
			var err error
			if tk, err = w.replicas[i%2].Get(context.Background(), ref); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.replicas[i%2].Relabel(context.Background(), tk, []string{"agent-smith:pending"}, "agent-smith:enqueued"); err != nil {
			failed++
		}
	}
	return w.sim.Stats().SecondaryRefused, failed, w.clock.Now().Sub(w.start)
}

// burstWorld is a sim enforcing GitHub's secondary limits, its Pending
// tickets and two replicas' trackers on one token, all on one fake clock.
type burstWorld struct {
	start    time.Time
	clock    *trackerhttptest.Clock
	sim      *trackersim.Sim
	refs     []platforms.Ref
	replicas []*github.Tracker
}

// newBurstWorld builds a burstWorld of tickets Pending tickets whose
// replicas write through api, paced by limits through a shared budget when
// shared, a request held at most maxWait (0: the transport's default, the
// daemon's), against a sim counting label writes as content creation when
// strictSim.
func newBurstWorld(t *testing.T, tickets int, api string, limits trackerhttp.RateLimits, strictSim, shared bool, maxWait time.Duration) *burstWorld {
	t.Helper()
	w := &burstWorld{start: time.Unix(1_700_000_000, 0)}
	w.clock = trackerhttptest.NewClock(w.start)
	w.sim = trackersim.New(trackersim.Options{Tokens: []string{simToken}, Clock: w.clock.Now, GitHubSecondaryLimits: true, GitHubLabelsAsContent: strictSim})
	t.Cleanup(w.sim.Close)
	srv := httptest.NewServer(w.sim.Handler())
	t.Cleanup(srv.Close)
	var share trackerhttp.SharedBudget
	if shared {
		share = budget.New(redistest.Start(t).Client(t), w.clock.Now)
	}
	for range tickets {
		w.refs = append(w.refs, platforms.Ref{Platform: github.Platform, ID: github.FormatID("acme/a", w.sim.CreateIssue("acme/a", "t", "", "agent-smith:pending"))})
	}
	replica := func() *github.Tracker {
		opts := trackerhttp.Options{Clock: w.clock.Now, Sleep: w.clock.Sleep, RateLimits: limits,
			CacheEntries: -1, Budget: share, MaxWait: maxWait, PaceSecondary: true}
		// No client timeout: the waits are on the fake clock.
		hc := &http.Client{Transport: trackerhttp.NewTransport(nil, opts), CheckRedirect: trackerhttp.CheckRedirect}
		tr, err := github.New(github.Options{BaseURL: srv.URL + "/github/", Repo: "acme/a", Token: simToken, HTTPClient: hc, API: api})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	// The replicas take turns: on the fake clock a sleep of one would move
	// time under the other's request in flight by a minute, a latency no
	// network has.
	w.replicas = []*github.Tracker{replica(), replica()}
	return w
}

// The default pacing (label writes pay points only) against a token GitHub
// refuses for label writes as content creations (the sim's strict
// reading) is refused, and survives it: each refusal holds the token and
// backs off (1 minute, doubling), a write held past the daemon's wait
// (trackerhttp.DefaultMaxWait) fails and its ticket is taken on again the
// next round (the poller's, a minute of GitHub time later), reading it
// first as the daemon does. Every ticket of the burst reaches Done with
// only Done's label; nothing is lost, only slower.
//
// Over GraphQL (the default) 100 tickets are 300 requests of two
// mutations, 600 creations: past the 500 an hour as well as the 80 a
// minute. Over REST 60 tickets (360 label writes) stay within the hour:
// go-github keeps its own hold after a refusal that names a Retry-After
// (Client.secondaryRateLimitReset, go-github v60 github.go), dated by the
// real clock, which this test's fake clock cannot move, so past the hourly
// limit every REST call would be refused by the client until real minutes
// pass.
func TestDefaultPacingSurvivesStrictRefusals(t *testing.T) {
	states := []string{"agent-smith:pending", "agent-smith:enqueued", "agent-smith:in-progress", "agent-smith:done"}
	for api, tickets := range map[string]int{github.APIREST: 60, github.APIGraphQL: 100} {
		t.Run("api="+api, func(t *testing.T) {
			w := newBurstWorld(t, tickets, api, trackerhttp.GitHubRateLimits, true, true, 0)
			ctx := context.Background()
			done, failed, rounds := map[platforms.Ref]bool{}, 0, 0
			for ; len(done) < tickets && w.clock.Now().Sub(w.start) < 24*time.Hour; rounds++ {
				for i, ref := range w.refs {
					if done[ref] {
						continue
					}
					tr := w.replicas[i%2]
					tk, err := tr.Get(ctx, ref)
					if err != nil {
						failed++
						continue
					}
					// The furthest state shown, as lifecycle.Labels.StateOf;
					// the write removes every other lifecycle label, as
					// lifecycle.Relabel.
					at := 0
					for k, l := range states {
						if tk.HasLabel(l) {
							at = k
						}
					}
					if at == len(states)-1 && len(tk.Labels) == 1 {
						done[ref] = true
						continue
					}
					next := states[min(at+1, len(states)-1)]
					var remove []string
					for _, l := range tk.Labels {
						if l != next {
							remove = append(remove, l)
						}
					}
					if _, err := tr.Relabel(ctx, tk, remove, next); err != nil {
						failed++
					}
				}
				w.clock.Advance(time.Minute)
			}
			refused := w.sim.Stats().SecondaryRefused
			t.Logf("%d tickets Done of %d in %d rounds, %v of GitHub time; %d secondary-limit refusals, %d failed calls (retried)",
				len(done), tickets, rounds, w.clock.Now().Sub(w.start), refused, failed)
			if refused == 0 {
				t.Error("no refusal: the sim does not refuse the default pacing this case is about")
			}
			if len(done) != tickets {
				t.Errorf("%d of %d tickets reached Done within 24 hours of GitHub time", len(done), tickets)
			}
		})
	}
}
