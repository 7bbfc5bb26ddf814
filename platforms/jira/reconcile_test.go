package jira

import (
	"context"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// testClock is a settable clock shared by the sim and the trackers.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func listIDs(t *testing.T, tr *Tracker, label string) []string {
	t.Helper()
	got, err := tr.ListOpen(context.Background(), label)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tk := range got {
		ids = append(ids, tk.Ref.ID)
	}
	return ids
}

// TestListReconcilesOwnWrites runs two trackers (two replicas) against the
// sim's lagging Cloud search: the replica that wrote a ticket finds it at
// once in its next list thanks to reconcileIssues; the other replica's list
// is stale (a stale hit, with the old labels) until the index catches up,
// and only a Get shows the truth. Data Center's search is consistent.
func TestListReconcilesOwnWrites(t *testing.T) {
	clock := &testClock{now: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)}
	s := trackersim.New(trackersim.Options{Tokens: []string{"reconcile-token"}, Clock: clock.Now})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	url := srv.URL
	newTracker := func(deployment string) *Tracker {
		opts := Options{BaseURL: url + "/jira/", Repo: "OPS", Project: "ops", Token: "reconcile-token", Deployment: deployment,
			Locker: &memLocker{}, Clock: clock.Now, Writer: "test"}
		if deployment == DeploymentCloud {
			opts.Email = "bot@example.com"
		}
		tr, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	a, b, dc := newTracker(DeploymentCloud), newTracker(DeploymentCloud), newTracker(DeploymentDataCenter)
	n := s.CreateIssue("OPS", "queued", "", "agent-smith", "agent-smith:enqueued")
	ref := platforms.Ref{Platform: Platform, Project: "ops", ID: FormatID("OPS", n)}
	clock.Add(2 * trackersim.DefaultJiraSearchLag) // the index has the new issue

	tk, err := a.Get(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Relabel(context.Background(), tk, []string{"agent-smith:enqueued"}, "agent-smith:in-progress"); err != nil {
		t.Fatal(err)
	}
	if got := listIDs(t, a, "agent-smith:in-progress"); !slices.Equal(got, []string{ref.ID}) {
		t.Errorf("writer's list right after its write: %q, want %s (reconciled)", got, ref.ID)
	}
	if got := listIDs(t, b, "agent-smith:in-progress"); len(got) != 0 {
		t.Errorf("other replica's list: %q, want nothing yet (the index lags)", got)
	}
	stale, err := b.ListOpen(context.Background(), "agent-smith:enqueued")
	if err != nil || len(stale) != 1 || !stale[0].HasLabel("agent-smith:enqueued") {
		t.Fatalf("other replica's stale hit: %+v, %v; want the ticket as it was (enqueued)", stale, err)
	}
	fresh, err := b.Get(context.Background(), ref)
	if err != nil || !fresh.HasLabel("agent-smith:in-progress") || fresh.HasLabel("agent-smith:enqueued") {
		t.Fatalf("fresh read: %+v, %v; want in-progress", fresh, err)
	}
	if got := listIDs(t, dc, "agent-smith:in-progress"); !slices.Equal(got, []string{ref.ID}) {
		t.Errorf("Data Center list: %q, want %s (consistent)", got, ref.ID)
	}
	clock.Add(2 * trackersim.DefaultJiraSearchLag)
	if got := listIDs(t, b, "agent-smith:in-progress"); !slices.Equal(got, []string{ref.ID}) {
		t.Errorf("other replica's list after the lag: %q, want %s", got, ref.ID)
	}
	if got := a.recent.reconcile(); len(got) != 1 {
		t.Errorf("reconciled ids %v, want the one written", got)
	}
	clock.Add(DefaultReconcileWindow)
	if got := a.recent.reconcile(); len(got) != 0 {
		t.Errorf("reconciled ids past the window: %v, want none", got)
	}
}

// TestReconcileBounded: at most 50 ids, newest first, each once; writes of
// issues never read (id unknown) are not reconciled.
func TestReconcileBounded(t *testing.T) {
	clock := &testClock{now: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)}
	r := recentWrites{now: clock.Now, window: time.Minute}
	for i := 1; i <= 60; i++ {
		key := FormatID("OPS", i)
		r.learn(key, strconv.Itoa(10000+i))
		r.wrote(key)
		clock.Add(time.Millisecond)
	}
	r.wrote(FormatID("OPS", 3)) // written again: now the newest
	r.wrote("OPS-999")          // never read
	got := r.reconcile()
	if len(got) != MaxReconcileIssues || got[0] != 10003 || got[1] != 10060 || slices.Contains(got, 10010) {
		t.Fatalf("reconcile = %v; want 50 ids, 10003 first, then 10060 down, without the oldest", got)
	}
	seen := map[int64]bool{}
	for _, id := range got {
		if seen[id] {
			t.Fatalf("id %d twice", id)
		}
		seen[id] = true
	}
}
