package github_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp/trackerhttptest"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// GitHub's secondary limit, as 403 and as 429, without Retry-After and with
// quota left: ten reads while limited send one request, the one that was
// refused; the credentials are held a minute, then two on the next refusal,
// and the reads fail with ErrRateLimited meanwhile instead of hammering.
func TestSecondaryRateLimitIsNotHammered(t *testing.T) {
	for _, shape := range []string{trackersim.RateLimitGitHubSecondary403, trackersim.RateLimitGitHubSecondary429} {
		t.Run(shape, func(t *testing.T) {
			clock := trackerhttptest.NewClock(time.Unix(1_700_000_000, 0))
			s := trackersim.New(trackersim.Options{Tokens: []string{simToken}, Clock: clock.Now})
			t.Cleanup(s.Close)
			srv := httptest.NewServer(s.Handler())
			t.Cleanup(srv.Close)
			n := s.CreateIssue("octo/limits", "limited", "")
			hc := clock.Client(trackerhttp.GitHubRateLimits)
			// A fresh go-github client per phase: go-github also refuses
			// requests by itself, on wall time, after a 403 secondary limit
			// (its own hold, with the Retry-After this transport hands it);
			// a new client shows what the transport alone lets through.
			newTracker := func() *github.Tracker {
				tr, err := github.New(github.Options{BaseURL: srv.URL + "/github/", Repo: "octo/limits", Token: simToken, HTTPClient: hc})
				if err != nil {
					t.Fatal(err)
				}
				return tr
			}
			ref := platforms.Ref{Platform: github.Platform, ID: github.FormatID("octo/limits", n)}
			ctx := context.Background()
			reads := func(tr *github.Tracker, k int) (sent int) {
				t.Helper()
				before := s.Stats().Requests()
				for range k {
					if _, err := tr.Get(ctx, ref); !errors.Is(err, trackerhttp.ErrRateLimited) {
						t.Fatalf("Get while limited: err = %v, want ErrRateLimited", err)
					}
				}
				return s.Stats().Requests() - before
			}

			s.SetFaults(trackersim.Faults{RateLimitNext: 1000, RateLimitShape: shape})
			tr := newTracker()
			if sent := reads(tr, 10); sent != 1 {
				t.Fatalf("10 reads while limited sent %d requests, want 1", sent)
			}
			clock.Advance(61 * time.Second)
			tr = newTracker()
			if sent := reads(tr, 10); sent != 1 {
				t.Fatalf("after the 1-minute hold, 10 reads sent %d requests, want 1", sent)
			}
			clock.Advance(61 * time.Second) // inside the doubled 2-minute hold
			if sent := reads(newTracker(), 10); sent != 0 {
				t.Fatalf("inside the 2-minute hold, 10 reads sent %d requests, want 0", sent)
			}
			s.SetFaults(trackersim.Faults{})
			clock.Advance(60 * time.Second)
			before := s.Stats().Requests()
			if _, err := newTracker().Get(ctx, ref); err != nil {
				t.Fatalf("Get after the holds: %v", err)
			}
			if sent := s.Stats().Requests() - before; sent != 1 {
				t.Fatalf("Get after the holds sent %d requests, want 1", sent)
			}
			if len(clock.Sleeps()) != 0 {
				t.Errorf("slept %v: a minute-long hold must fail fast within a 30 s request timeout", clock.Sleeps())
			}
			t.Logf("%s: 31 calls while limited over 3 minutes sent 2 requests", shape)
		})
	}
}
