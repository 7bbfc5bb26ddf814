package gitlab_test

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
	"github.com/agentsmithd/agentsmithd/platforms/gitlab"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// gitlab.com's bare 429 (no RateLimit-*, no Retry-After) holds the token a
// minute: ten reads send one request; RateLimit-Remaining 0 on a 200 holds
// the next request until RateLimit-Reset, and it is then sent once.
func TestRateLimitsAreNotHammered(t *testing.T) {
	clock := trackerhttptest.NewClock(time.Unix(1_700_000_000, 0))
	s := trackersim.New(trackersim.Options{Tokens: []string{simToken}, Clock: clock.Now})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	n := s.CreateIssue("grp/limits", "limited", "")
	tr, err := gitlab.New(gitlab.Options{BaseURL: srv.URL + "/gitlab/", Repo: "grp/limits", Token: simToken,
		HTTPClient: clock.Client(trackerhttp.GitLabRateLimits)})
	if err != nil {
		t.Fatal(err)
	}
	ref := platforms.Ref{Platform: gitlab.Platform, ID: gitlab.FormatID("grp/limits", n)}
	ctx := context.Background()

	s.SetFaults(trackersim.Faults{RateLimitNext: 1000, RateLimitShape: trackersim.RateLimitGitLabBare})
	before := s.Stats().Requests()
	for range 10 {
		if _, err := tr.Get(ctx, ref); !errors.Is(err, trackerhttp.ErrRateLimited) {
			t.Fatalf("Get while limited: err = %v, want ErrRateLimited", err)
		}
	}
	if sent := s.Stats().Requests() - before; sent != 1 {
		t.Fatalf("10 reads after a bare 429 sent %d requests, want 1", sent)
	}

	// Quota spent, reported on a normal answer: the next read waits 20 s.
	s.SetFaults(trackersim.Faults{ThrottleNext: 1, RetryAfter: 20})
	clock.Advance(61 * time.Second)
	before = s.Stats().Requests()
	for i := range 2 {
		if _, err := tr.Get(ctx, ref); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
	}
	if sent := s.Stats().Requests() - before; sent != 2 {
		t.Fatalf("2 reads sent %d requests, want 2", sent)
	}
	if got := clock.Sleeps(); !slices.Equal(got, []time.Duration{20 * time.Second}) {
		t.Fatalf("waits = %v, want the 20 s to RateLimit-Reset before the second read", got)
	}
	t.Logf("bare 429: 10 calls sent 1 request; RateLimit-Remaining 0: next request held %v", clock.Sleeps()[0])
}
