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

// A burst of 300 triggered tickets, claimed by two replicas on one token
// (pending → enqueued, two REST writes each: 600 content creations, more
// than GitHub's 500 an hour), draws no secondary-limit refusal when the
// replicas share the budget: the transport paces the writes to 80 a minute
// and 500 an hour. Without the shared budget the same burst is refused.
// On the GraphQL path a transition is one request of two mutations, which
// the sim counts as two creations: pacing must charge both.
func TestBurstIsPacedBeforeTheSecondaryLimits(t *testing.T) {
	for _, api := range []string{github.APIREST, github.APIGraphQL} {
		for _, shared := range []bool{true, false} {
			t.Run(fmt.Sprintf("api=%s/shared=%v", api, shared), func(t *testing.T) {
				refused := burst(t, 300, api, shared)
				if shared && refused != 0 {
					t.Errorf("paced burst: %d secondary-limit refusals, want 0", refused)
				}
				if !shared && refused == 0 {
					t.Errorf("unpaced burst: no refusal; the sim does not enforce the limits this test is about")
				}
			})
		}
	}
}

// burst relabels tickets from two replicas writing through api and returns
// the sim's secondary-limit refusals.
func burst(t *testing.T, tickets int, api string, shared bool) int {
	t.Helper()
	clock := trackerhttptest.NewClock(time.Unix(1_700_000_000, 0))
	s := trackersim.New(trackersim.Options{Tokens: []string{simToken}, Clock: clock.Now, GitHubSecondaryLimits: true, GitHubLabelsAsContent: true})
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
		opts := trackerhttp.Options{Clock: clock.Now, Sleep: clock.Sleep, RateLimits: trackerhttp.GitHubRateLimits,
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
		if _, err := replicas[i%2].Relabel(context.Background(), tk, []string{"agent-smith:pending"}, "agent-smith:enqueued"); err != nil && shared {
			t.Fatalf("ticket %d: %v", i, err)
		}
	}
	if shared {
		if took := clock.Now().Sub(time.Unix(1_700_000_000, 0)); took < time.Hour {
			t.Errorf("600 content creations took %v, want over an hour (500 an hour)", took)
		}
	}
	return s.Stats().SecondaryRefused
}
