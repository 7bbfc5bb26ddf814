package azuredevops_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp/trackerhttptest"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/azuredevops"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// Over its budget Azure DevOps delays requests and answers 200 with
// X-RateLimit-Remaining 0 (reset five minutes away): every read still
// succeeds, each is sent once (no retries), and the client only spaces them
// by a bounded pace — never a hold for the reset.
func TestDelayedAnswersSlowDownWithoutStopping(t *testing.T) {
	clock := trackerhttptest.NewClock(time.Unix(1_700_000_000, 0))
	s := trackersim.New(trackersim.Options{Tokens: []string{simToken}, Clock: clock.Now})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	const repo = "Org/Limits"
	n := s.CreateIssue(repo, "limited", "")
	tr, err := azuredevops.New(azuredevops.Options{BaseURL: srv.URL + "/ado/", Repo: repo, Token: simToken,
		HTTPClient: clock.Client(trackerhttp.AzureDevOpsRateLimits)})
	if err != nil {
		t.Fatal(err)
	}
	org, project, _ := azuredevops.SplitRepo(repo)
	ref := platforms.Ref{Platform: azuredevops.Platform, ID: azuredevops.FormatID(azuredevops.Locator(org, project), n)}
	ctx := context.Background()
	reads := func(k int) int {
		t.Helper()
		before := s.Stats().Requests()
		for i := range k {
			if _, err := tr.Get(ctx, ref); err != nil {
				t.Fatalf("read %d: %v", i, err)
			}
		}
		return s.Stats().Requests() - before
	}
	reads(1)              // the SDK's first call adds its resource-area discovery
	unlimited := reads(1) // what one read costs from then on

	s.SetFaults(trackersim.Faults{ThrottleNext: 1000, ThrottleDelay: 10 * time.Millisecond})
	start := clock.Now()
	if sent := reads(10); sent != 10*unlimited {
		t.Fatalf("10 delayed reads sent %d requests, want %d (no retries)", sent, 10*unlimited)
	}
	var total time.Duration
	for _, d := range clock.Sleeps() {
		if d > trackerhttp.AzureDevOpsRateLimits.Pace.Max {
			t.Fatalf("waited %v before one request, want at most the pace bound %v", d, trackerhttp.AzureDevOpsRateLimits.Pace.Max)
		}
		total += d
	}
	if len(clock.Sleeps()) < 9 {
		t.Fatalf("waits = %v, want the requests spaced after the first delayed answer", clock.Sleeps())
	}
	if spent := clock.Now().Sub(start); spent > time.Minute {
		t.Fatalf("10 reads took %v of client time, want well under the five-minute reset", spent)
	}
	t.Logf("10 delayed reads: %d requests, %d waits totalling %v", 10*unlimited, len(clock.Sleeps()), total)
}
