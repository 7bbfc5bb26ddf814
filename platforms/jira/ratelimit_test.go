package jira_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp/trackerhttptest"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/jira"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// noLocks is a Locker for tests that only read.
type noLocks struct{}

func (noLocks) TryLock(context.Context, string, time.Duration) (func(), bool, error) {
	return func() {}, true, nil
}

// Jira Cloud's 429 that names its reset only as an ISO 8601 minute is
// waited out to that minute's end and retried once; its 503 with
// Retry-After is retried after it; and a limit that persists sends a
// bounded number of requests, then none until the reset.
func TestRateLimitsAreNotHammered(t *testing.T) {
	clock := trackerhttptest.NewClock(time.Date(2023, 11, 14, 22, 13, 40, 0, time.UTC))
	s := trackersim.New(trackersim.Options{Tokens: []string{simToken}, Clock: clock.Now})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	n := s.CreateIssue("LIM", "limited", "")
	tr, err := jira.New(jira.Options{BaseURL: srv.URL + "/jira/", Repo: "LIM", Token: simToken, Email: "bot@example.com",
		Deployment: jira.DeploymentCloud, Locker: noLocks{}, HTTPClient: clock.Client(trackerhttp.JiraRateLimits)})
	if err != nil {
		t.Fatal(err)
	}
	ref := platforms.Ref{Platform: jira.Platform, ID: jira.FormatID("LIM", n)}
	ctx := context.Background()
	read := func() (int, error) {
		before := s.Stats().Requests()
		_, err := tr.Get(ctx, ref)
		return s.Stats().Requests() - before, err
	}

	// 22:13:40 + 5 s → "2023-11-14T22:13Z" → wait until 22:14:00.
	s.SetFaults(trackersim.Faults{RateLimitNext: 1, RetryAfter: 5, RateLimitShape: trackersim.RateLimitJiraReset})
	if sent, err := read(); err != nil || sent != 2 {
		t.Fatalf("429 with ISO reset: sent %d, err %v; want 2 requests and success", sent, err)
	}
	s.SetFaults(trackersim.Faults{RateLimitNext: 1, RetryAfter: 3, RateLimitShape: trackersim.RateLimitJira503})
	if sent, err := read(); err != nil || sent != 2 {
		t.Fatalf("503 with Retry-After: sent %d, err %v; want 2 requests and success", sent, err)
	}
	if got := clock.Sleeps(); !slices.Equal(got, []time.Duration{20 * time.Second, 3 * time.Second}) {
		t.Fatalf("waits = %v, want [20s 3s]", got)
	}

	// A limit that persists (reset 40 s away, beyond what a 30 s request
	// may wait): the first read sends one request, nine more send none.
	s.SetFaults(trackersim.Faults{RateLimitNext: 1000, RetryAfter: 40, RateLimitShape: trackersim.RateLimitJiraReset})
	total := 0
	for i := range 10 {
		sent, err := read()
		if !errors.Is(err, trackerhttp.ErrRateLimited) {
			t.Fatalf("read %d while limited: err = %v, want ErrRateLimited", i, err)
		}
		total += sent
	}
	if total != 1 {
		t.Fatalf("10 reads while limited sent %d requests, want 1", total)
	}
	t.Logf("ISO reset 429: 2 requests, wait %v; 503: 2 requests, wait %v; persistent limit: 10 calls sent %d", clock.Sleeps()[0], clock.Sleeps()[1], total)
}
