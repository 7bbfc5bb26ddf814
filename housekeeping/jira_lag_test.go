package housekeeping

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/jira"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

type lockerFunc struct{ rdb redis.Cmdable }

func (l lockerFunc) TryLock(ctx context.Context, key string, ttl time.Duration) (func(), bool, error) {
	token := redislock.NewToken()
	ok, err := redislock.Acquire(ctx, l.rdb, key, token, ttl)
	if err != nil || !ok {
		return nil, false, err
	}
	return func() { _, _ = redislock.Release(context.WithoutCancel(ctx), l.rdb, key, token) }, true, nil
}

type lagClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *lagClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *lagClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// jiraWorld is a Jira Cloud project on the sim, whose search lags writes
// by sim.DefaultJiraSearchLag, with housekeeping's claim service over it.
// other is a second tracker for the same project: another replica, whose
// writes this replica's searches do not reconcile.
type jiraWorld struct {
	rdb    *redis.Client
	sim    *trackersim.Sim
	clock  *lagClock
	claims *claim.Service
	other  *jira.Tracker
	labels lifecycle.Labels
}

func newJiraWorld(t *testing.T) *jiraWorld {
	t.Helper()
	rdb := redistest.Start(t).Client(t)
	clock := &lagClock{now: time.Now().UTC()}
	s := trackersim.New(trackersim.Options{Clock: clock.Now})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	tracker := func(writer string) *jira.Tracker {
		tr, err := jira.New(jira.Options{BaseURL: srv.URL + "/jira/", Repo: "OPS", Project: "ops", Token: "t", Email: "bot@example.com",
			Locker: lockerFunc{rdb}, Clock: clock.Now, Writer: writer})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	labels := lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}
	projects := lifecycle.Projects{"ops": {Name: "ops", Platform: jira.Platform, Tracker: tracker("housekeeping"), TriggerLabel: "agent-smith",
		Pipeline: lifecycle.Pipeline{Command: []string{"true"}, MaxAttempts: 3}}}
	claims := claim.NewService(rdb, queue.New(rdb, keys.Queue()), projects, claim.Config{
		Instance: "test", Labels: labels, Clock: clock.Now})
	return &jiraWorld{rdb: rdb, sim: s, clock: clock, claims: claims, other: tracker("other-replica"), labels: labels}
}

func (w *jiraWorld) ref(n int) platforms.Ref {
	return platforms.Ref{Platform: jira.Platform, Project: "ops", ID: jira.FormatID("OPS", n)}
}

// moveByOther moves issue n from one lifecycle label to another through the
// other replica's tracker.
func (w *jiraWorld) moveByOther(t *testing.T, n int, from, to lifecycle.State) {
	t.Helper()
	tk, err := w.other.Get(t.Context(), w.ref(n))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.other.Relabel(t.Context(), tk, []string{w.labels.Label(from)}, w.labels.Label(to)); err != nil {
		t.Fatal(err)
	}
}

// TestStaleSearchHitNotActedOn: Jira's search still lists a ticket
// in-progress that another replica has just finished (Done); no heartbeat
// exists, so the StaleJobDetector would revert it, but it reads the ticket
// afresh first and leaves it alone. Once the index has caught up the ticket
// is not listed at all.
func TestStaleSearchHitNotActedOn(t *testing.T) {
	w := newJiraWorld(t)
	n := w.sim.CreateIssue("OPS", "finished elsewhere", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
	w.clock.Add(2 * trackersim.DefaultJiraSearchLag)
	w.moveByOther(t, n, lifecycle.InProgress, lifecycle.Done)
	writes := len(w.sim.Writes())

	listed, err := w.claims.Projects()["ops"].Tracker.ListOpen(t.Context(), lifecycletest.Label(lifecycle.InProgress))
	if err != nil || len(listed) != 1 {
		t.Fatalf("listed %+v, %v; want the stale hit (the premise of this test)", listed, err)
	}
	d := NewStaleJobDetector(w.rdb, w.claims, StaleJobDetectorConfig{Clock: w.clock.Now})
	if err := d.SlowCycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	is, _ := w.sim.Issue("OPS", n)
	if got := len(w.sim.Writes()); got != writes || w.labels.StateOf(is.Labels) != lifecycle.Done {
		t.Fatalf("after the slow cycle: %d writes (want %d), labels %q (want done)", got, writes, is.Labels)
	}
	if n, _ := w.rdb.LLen(t.Context(), keys.Queue()).Result(); n != 0 {
		t.Errorf("queue length %d, want nothing queued", n)
	}
}

// TestOwnWriteListedAtOnce: the EnqueuedReconciler's replica claimed a
// ticket a moment ago (Enqueued, written by this tracker) and its request
// is lost; the next slow cycle lists the ticket at once thanks to
// reconcileIssues, although Jira's index does not have the write yet, and
// re-pushes it.
func TestOwnWriteListedAtOnce(t *testing.T) {
	w := newJiraWorld(t)
	n := w.sim.CreateIssue("OPS", "claimed here", "", "agent-smith")
	w.clock.Add(2 * trackersim.DefaultJiraSearchLag)
	res, err := w.claims.Claim(t.Context(), w.ref(n), lifecycle.SourcePoll, 1)
	if err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v, %v", res, err)
	}
	if err := w.rdb.Del(t.Context(), keys.Queue()).Err(); err != nil { // the request is lost
		t.Fatal(err)
	}
	if got, err := w.other.ListOpen(t.Context(), lifecycletest.Label(lifecycle.Enqueued)); err != nil || len(got) != 0 {
		t.Fatalf("another replica's list: %+v, %v; want nothing yet (the index lags)", got, err)
	}
	r := NewEnqueuedReconciler(w.rdb, queue.New(w.rdb, keys.Queue()), w.claims, EnqueuedReconcilerConfig{Clock: w.clock.Now})
	r.urgent = true // skip the grace: this test is about the list
	if err := r.SlowCycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n, _ := w.rdb.LLen(t.Context(), keys.Queue()).Result(); n != 1 {
		t.Fatalf("queue length %d, want the lost request re-pushed", n)
	}
}

// TestStaleSearchHitDoesNotCancel: the search still shows a running ticket
// without its trigger label, which a human has just put back; the
// CancelDetector reads the ticket before it asks for a cancel, and asks
// for none.
func TestStaleSearchHitDoesNotCancel(t *testing.T) {
	w := newJiraWorld(t)
	n := w.sim.CreateIssue("OPS", "running", "", lifecycletest.Label(lifecycle.InProgress))
	w.clock.Add(2 * trackersim.DefaultJiraSearchLag)
	if err := w.sim.AddLabels("OPS", n, "agent-smith"); err != nil {
		t.Fatal(err)
	}
	rec := runstate.Record{Ref: w.ref(n), Instance: "consumer", Token: "consumer|poll|0|tok", Attempt: 1}
	if ok, err := runstate.Take(t.Context(), w.rdb, rec, runstate.TakeArgs{TTL: time.Minute, Now: time.Now()}); err != nil || ok.Result != runstate.Taken {
		t.Fatalf("take run: %v %v", ok, err)
	}
	listed, err := w.claims.Projects()["ops"].Tracker.ListOpen(t.Context(), lifecycletest.Label(lifecycle.InProgress))
	if err != nil || len(listed) != 1 || listed[0].HasLabel("agent-smith") {
		t.Fatalf("listed %+v, %v; want the stale hit without the trigger (the premise of this test)", listed, err)
	}
	if err := NewCancelDetector(w.rdb, w.claims, CancelDetectorConfig{}).Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n, _ := w.rdb.Exists(t.Context(), keys.Cancel(w.ref(n).Key())).Result(); n != 0 {
		t.Fatal("a cancel was requested from a stale search hit")
	}
}
