package discovery

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// org is a GitHub organisation whose listing a test changes, and whose
// listing can fail.
type org struct {
	mu    sync.Mutex
	repos []string
	fail  error
	calls int
}

func (o *org) set(repos []string, fail error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.repos, o.fail = repos, fail
}

func (o *org) list(_ context.Context, _ *config.Project, _ string) ([]Repo, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	if o.fail != nil {
		return nil, o.fail
	}
	var out []Repo
	for _, r := range o.repos {
		out = append(out, Repo{Path: r})
	}
	return out, nil
}

// applied records every expansion Apply received.
type applied struct {
	mu  sync.Mutex
	got [][]string
}

func (a *applied) apply(_ context.Context, ps []config.Project) error {
	var names []string
	for _, p := range ps {
		names = append(names, p.Repo)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, names)
	return nil
}

func (a *applied) last() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.got) == 0 {
		return nil
	}
	return a.got[len(a.got)-1]
}

func (a *applied) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.got)
}

func startRefresher(t *testing.T, cfg RefresherConfig) {
	t.Helper()
	r := NewRefresher(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

var orgProject = []config.Project{{Name: "org", Platform: "github", Repos: []string{"acme/*"}}}

// The signal a repository webhook sets is what makes a replica list again
// when the full period is an hour away: one move, one listing, however
// many checks read it, besides the one every Run starts with.
func TestRefresherListsWhenTheSignalMoves(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	o := &org{repos: []string{"acme/a"}}
	var a applied
	startRefresher(t, RefresherConfig{RDB: rdb, Projects: orgProject, Interval: time.Hour, SignalCheck: 20 * time.Millisecond,
		Apply: a.apply, List: o.list, Logger: zaptest.NewLogger(t)})
	eventually.Wait(t, 5*time.Second, "the listing at start", func() bool { return a.count() == 1 })
	o.set([]string{"acme/a", "acme/b"}, nil)
	if err := rdb.Incr(context.Background(), keys.Discovery()).Err(); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 5*time.Second, "acme/b to be applied", func() bool {
		return slices.Equal(a.last(), []string{"acme/a", "acme/b"})
	})
	if n := a.count(); n != 2 {
		t.Errorf("%d listings applied for the start and one signal, want 2", n)
	}
}

// The full period finds what no webhook reported; a failed listing applies
// nothing (the replica keeps serving what it found) and the next period
// applies the organisation as it is then.
func TestRefresherListsEveryIntervalAndKeepsWhatItHasOnAFailure(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	o := &org{fail: errors.New("502 Bad Gateway")}
	var a applied
	startRefresher(t, RefresherConfig{RDB: rdb, Projects: orgProject, Interval: 30 * time.Millisecond, SignalCheck: time.Hour,
		Apply: a.apply, List: o.list, Logger: zaptest.NewLogger(t)})
	eventually.Wait(t, 5*time.Second, "two failed listings", func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.calls >= 2
	})
	if n := a.count(); n != 0 {
		t.Fatalf("a failed listing applied %d expansions", n)
	}
	o.set([]string{"acme/c"}, nil)
	eventually.Wait(t, 5*time.Second, "the next period's listing to be applied", func() bool {
		return slices.Equal(a.last(), []string{"acme/c"})
	})
}
