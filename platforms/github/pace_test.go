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
	start := time.Unix(1_700_000_000, 0)
	clock := trackerhttptest.NewClock(start)
	s := trackersim.New(trackersim.Options{Tokens: []string{simToken}, Clock: clock.Now, GitHubSecondaryLimits: true, GitHubLabelsAsContent: strictSim})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	var share trackerhttp.SharedBudget
	if shared {
		share = budget.New(redistest.Start(t).Client(t), clock.Now)
	}
	var refs []platforms.Ref
	for range tickets {
		refs = append(refs, platforms.Ref{Platform: github.Platform, ID: github.FormatID("acme/a", s.CreateIssue("acme/a", "t", "", "agent-smith:pending"))})
	}
	replica := func() *github.Tracker {
		opts := trackerhttp.Options{Clock: clock.Now, Sleep: clock.Sleep, RateLimits: limits,
			CacheEntries: -1, Budget: share, MaxWait: 2 * time.Hour, PaceSecondary: true}
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
	replicas := []*github.Tracker{replica(), replica()}
	for i, ref := range refs {
		tk := &platforms.Ticket{Ref: ref, Labels: []string{"agent-smith:pending"}}
		if api == github.APIGraphQL {
			// The claim's read, which carries the issue's node id.
			var err error
			if tk, err = replicas[i%2].Get(context.Background(), ref); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := replicas[i%2].Relabel(context.Background(), tk, []string{"agent-smith:pending"}, "agent-smith:enqueued"); err != nil {
			failed++
		}
	}
	return s.Stats().SecondaryRefused, failed, clock.Now().Sub(start)
}
