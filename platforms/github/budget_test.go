package github_test

import (
	"context"
	"errors"
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

// budgetWorld is one token used by "replicas": each its own transport
// (its own rate-limit view and no shared HTTP cache), all sharing one
// budget through a real Redis.
type budgetWorld struct {
	sim   *trackersim.Sim
	clock *trackerhttptest.Clock
	url   string
	share trackerhttp.SharedBudget
	refs  []platforms.Ref
}

func newBudgetWorld(t *testing.T, limit int) *budgetWorld {
	t.Helper()
	clock := trackerhttptest.NewClock(time.Unix(1_700_000_000, 0))
	s := trackersim.New(trackersim.Options{Tokens: []string{simToken}, Clock: clock.Now, RateLimit: limit})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	w := &budgetWorld{sim: s, clock: clock, url: srv.URL + "/github/", share: budget.New(redistest.Start(t).Client(t), clock.Now)}
	for range 30 {
		w.refs = append(w.refs, platforms.Ref{Platform: github.Platform, ID: github.FormatID("acme/a", s.CreateIssue("acme/a", "t", ""))})
	}
	return w
}

// replica is another process: a tracker over a fresh transport, with the
// shared budget when shared is true.
func (w *budgetWorld) replica(t *testing.T, shared bool) *github.Tracker {
	t.Helper()
	opts := trackerhttp.Options{Clock: w.clock.Now, Sleep: w.clock.Sleep, RateLimits: trackerhttp.GitHubRateLimits, CacheEntries: -1}
	if shared {
		opts.Budget = w.share
	}
	tr, err := github.New(github.Options{BaseURL: w.url, Repo: "acme/a", Token: simToken, HTTPClient: trackerhttp.NewClientWith(opts)})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// sent runs f and returns how many requests reached the sim.
func (w *budgetWorld) sent(f func()) int {
	before := w.sim.Stats().Requests()
	f()
	return w.sim.Stats().Requests() - before
}

// After one replica spent the token's primary quota (the answer says 0
// remain until the reset), another replica's request is held without a
// call; without the shared budget it is sent and refused 403.
func TestSharedBudgetHoldsAnotherReplicaAtTheLimit(t *testing.T) {
	w := newBudgetWorld(t, 3)
	ctx := context.Background()
	a := w.replica(t, true)
	for i := range 3 {
		if _, err := a.Get(ctx, w.refs[i]); err != nil {
			t.Fatalf("replica A read %d: %v", i+1, err)
		}
	}
	b := w.replica(t, true)
	if n := w.sent(func() {
		if _, err := b.Get(ctx, w.refs[3]); !errors.Is(err, trackerhttp.ErrRateLimited) {
			t.Errorf("replica B at the limit A hit: err = %v, want ErrRateLimited", err)
		}
	}); n != 0 {
		t.Errorf("replica B sent %d requests after A spent the quota, want 0", n)
	}
	alone := w.replica(t, false)
	if n := w.sent(func() {
		if _, err := alone.Get(ctx, w.refs[3]); err == nil {
			t.Error("a replica without the shared budget read past the limit; the sim must refuse it")
		}
	}); n != 1 {
		t.Errorf("a replica without the shared budget sent %d requests, want 1 (it learns the limit alone)", n)
	}
	w.clock.Advance(time.Hour + time.Second)
	if n := w.sent(func() {
		if _, err := b.Get(ctx, w.refs[3]); err != nil {
			t.Errorf("replica B after the reset: %v", err)
		}
	}); n != 1 {
		t.Errorf("replica B after the reset sent %d requests, want 1", n)
	}
}

// A 429 secondary limit one replica got (no Retry-After: a one-minute
// hold) holds the other replica's requests without a call until it ends.
func TestSharedBudgetHoldsAnotherReplicaAfterA429(t *testing.T) {
	w := newBudgetWorld(t, 5000)
	ctx := context.Background()
	w.sim.SetFaults(trackersim.Faults{RateLimitNext: 1000, RateLimitShape: trackersim.RateLimitGitHubSecondary429})
	a, b := w.replica(t, true), w.replica(t, true)
	if n := w.sent(func() {
		if _, err := a.Get(ctx, w.refs[0]); !errors.Is(err, trackerhttp.ErrRateLimited) {
			t.Errorf("replica A on a 429: err = %v, want ErrRateLimited", err)
		}
	}); n != 1 {
		t.Fatalf("replica A sent %d requests, want 1 (the refused one)", n)
	}
	if n := w.sent(func() {
		if _, err := b.Get(ctx, w.refs[1]); !errors.Is(err, trackerhttp.ErrRateLimited) {
			t.Errorf("replica B while A's hold lasts: err = %v, want ErrRateLimited", err)
		}
	}); n != 0 {
		t.Errorf("replica B sent %d requests during the hold A learned, want 0", n)
	}
	w.sim.SetFaults(trackersim.Faults{})
	w.clock.Advance(61 * time.Second)
	if n := w.sent(func() {
		if _, err := b.Get(ctx, w.refs[1]); err != nil {
			t.Errorf("replica B after the hold: %v", err)
		}
	}); n != 1 {
		t.Errorf("replica B after the hold sent %d requests, want 1", n)
	}
}

// With less than the reserve (10 %) of the quota left, low-priority
// requests (housekeeping, polling) stop on every replica without a call,
// and high-priority ones (claims, run transitions) go on.
func TestSharedBudgetKeepsTheReserveForHighPriority(t *testing.T) {
	w := newBudgetWorld(t, 20)
	ctx := context.Background()
	a := w.replica(t, true)
	for i := range 19 { // 1 left, under the reserve of 2
		if _, err := a.Get(ctx, w.refs[i]); err != nil {
			t.Fatalf("replica A read %d: %v", i+1, err)
		}
	}
	b := w.replica(t, true)
	low := trackerhttp.WithPriority(ctx, trackerhttp.PriorityLow)
	if n := w.sent(func() {
		if _, err := b.ListOpen(low, "agent-smith"); !errors.Is(err, trackerhttp.ErrRateLimited) {
			t.Errorf("low-priority listing in the reserve: err = %v, want ErrRateLimited", err)
		}
	}); n != 0 {
		t.Errorf("a low-priority listing in the reserve sent %d requests, want 0", n)
	}
	if n := w.sent(func() {
		if _, err := b.Get(ctx, w.refs[19]); err != nil {
			t.Errorf("high-priority read in the reserve: %v", err)
		}
	}); n != 1 {
		t.Errorf("a high-priority read in the reserve sent %d requests, want 1", n)
	}
}
