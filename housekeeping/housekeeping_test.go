package housekeeping

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// deadRun makes issue n look like a run owned by instance: InProgress on the
// tracker, a heartbeat and an in-flight record in Redis.
func deadRun(t *testing.T, w *lifecycletest.World, n int, instance string, attempt int) {
	t.Helper()
	rec := runstate.Record{Ref: lifecycletest.Ref(n), Instance: instance, Token: instance + "|webhook|0|tok", Attempt: attempt}
	ok, err := runstate.Take(t.Context(), w.RDB, rec, runstate.TakeArgs{TTL: time.Minute, Now: time.Now()})
	if err != nil || ok.Result != runstate.Taken {
		t.Fatalf("take run: %v %v", ok, err)
	}
}

func TestFastCycleRevertsRunOfDeadInstanceAndReclaims(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dead := w.Sim.CreateIssue(lifecycletest.Repo, "dead", "", "keep", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
	alive := w.Sim.CreateIssue(lifecycletest.Repo, "alive", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
	deadRun(t, w, dead, "ghost", 1)
	deadRun(t, w, alive, "alive-replica", 1)
	if err := w.RDB.Set(t.Context(), keys.Instance("alive-replica"), "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	d := NewStaleJobDetector(w.RDB, w.Claims, StaleJobDetectorConfig{})
	if err := d.FastCycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s := w.State(t, dead); s != lifecycle.Enqueued {
		t.Errorf("dead run's ticket is %s, want reverted and claimed again (enqueued)", s)
	}
	if s := w.State(t, alive); s != lifecycle.InProgress {
		t.Errorf("live run's ticket is %s, want untouched", s)
	}
	reqs := w.Requests(t)
	if len(reqs) != 1 || reqs[0].Attempt != 2 || reqs[0].Source != lifecycle.SourceReclaim || reqs[0].Ref != lifecycletest.Ref(dead) {
		t.Errorf("queue = %+v, want one reclaim request for the dead ticket, attempt 2", reqs)
	}
	if n, _ := w.RDB.Exists(t.Context(), keys.Heartbeat(lifecycletest.Ref(dead).Key())).Result(); n != 0 {
		t.Error("the dead owner's heartbeat must be deleted, fencing it out")
	}
	is, _ := w.Sim.Issue(lifecycletest.Repo, dead)
	if is.Labels[0] != "keep" || is.Labels[1] != "agent-smith" {
		t.Errorf("labels = %q, other labels must survive in order", is.Labels)
	}
}

func TestRevertPastMaxAttemptsFailsWithComment(t *testing.T) {
	w := lifecycletest.New(t, 2)
	n := w.Sim.CreateIssue(lifecycletest.Repo, "doomed", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
	deadRun(t, w, n, "ghost", 2)
	if err := NewStaleJobDetector(w.RDB, w.Claims, StaleJobDetectorConfig{}).FastCycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s := w.State(t, n); s != lifecycle.Failed {
		t.Fatalf("state %s, want failed", s)
	}
	is, _ := w.Sim.Issue(lifecycletest.Repo, n)
	if len(is.Comments) != 1 || !strings.Contains(is.Comments[0].Body, "2 of 2 attempts") {
		t.Errorf("comments = %+v, want one saying the attempts ran out", is.Comments)
	}
	if len(w.Requests(t)) != 0 {
		t.Error("an exhausted ticket must not be queued")
	}
}

func TestSlowCycleRevertsInProgressWithoutHeartbeat(t *testing.T) {
	w := lifecycletest.New(t, 3)
	orphan := w.Sim.CreateIssue(lifecycletest.Repo, "orphan after redis loss", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
	running := w.Sim.CreateIssue(lifecycletest.Repo, "running", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
	deadRun(t, w, running, "somebody", 1) // has a heartbeat: the slow cycle leaves it alone
	if err := NewStaleJobDetector(w.RDB, w.Claims, StaleJobDetectorConfig{}).SlowCycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s := w.State(t, orphan); s != lifecycle.Enqueued {
		t.Errorf("orphan is %s, want enqueued again", s)
	}
	if s := w.State(t, running); s != lifecycle.InProgress {
		t.Errorf("running ticket is %s, want in-progress", s)
	}
}

func TestReconcilerRepushesOrphansAfterGraceOnly(t *testing.T) {
	w := lifecycletest.New(t, 3)
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	orphan := w.Sim.CreateIssue(lifecycletest.Repo, "orphan", "", "agent-smith", lifecycletest.Label(lifecycle.Enqueued))
	queued := w.Sim.CreateIssue(lifecycletest.Repo, "queued", "", "agent-smith")
	if res, err := w.Claims.Claim(t.Context(), lifecycletest.Ref(queued), lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	r := NewEnqueuedReconciler(w.RDB, w.Queue, w.Claims, EnqueuedReconcilerConfig{Grace: 30 * time.Second, Clock: clock})
	if err := r.SlowCycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := len(w.Requests(t)); got != 1 {
		t.Fatalf("within the grace period: %d requests, want only the claimed one", got)
	}
	now = now.Add(31 * time.Second)
	if err := r.SlowCycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	reqs := w.Requests(t)
	if len(reqs) != 2 || reqs[1].Ref != lifecycletest.Ref(orphan) || reqs[1].Source != lifecycle.SourceReconcile {
		t.Fatalf("after the grace period: %+v, want the orphan re-pushed once", reqs)
	}
	if err := r.SlowCycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := len(w.Requests(t)); got != 2 {
		t.Errorf("a queued ticket was pushed again: %d requests", got)
	}
}

func TestReconcilerSkipsGraceRightAfterRedisLoss(t *testing.T) {
	w := lifecycletest.New(t, 3)
	orphan := w.Sim.CreateIssue(lifecycletest.Repo, "orphan", "", "agent-smith", lifecycletest.Label(lifecycle.Enqueued))
	r := NewEnqueuedReconciler(w.RDB, w.Queue, w.Claims, EnqueuedReconcilerConfig{Grace: time.Hour})
	if err := r.slowKicked(t.Context()); err != nil {
		t.Fatal(err)
	}
	if reqs := w.Requests(t); len(reqs) != 1 || reqs[0].Ref != lifecycletest.Ref(orphan) {
		t.Errorf("queue = %+v, want the orphan re-pushed at once", reqs)
	}
}

func TestReconcilerFastCycleRequeuesDeadInstancesProcessingList(t *testing.T) {
	w := lifecycletest.New(t, 3)
	ctx := t.Context()
	for _, inst := range []string{"dead", "alive"} {
		if err := w.Queue.Push(ctx, []byte(`{"id":"`+inst+`"}`)); err != nil {
			t.Fatal(err)
		}
		if p, err := w.Queue.Take(ctx, keys.Processing(inst), 0); err != nil || p == nil {
			t.Fatalf("take: %q %v", p, err)
		}
	}
	if err := w.RDB.Set(ctx, keys.Instance("alive"), "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	r := NewEnqueuedReconciler(w.RDB, w.Queue, w.Claims, EnqueuedReconcilerConfig{})
	if err := r.FastCycle(ctx); err != nil {
		t.Fatal(err)
	}
	entries, _ := w.Queue.Entries(ctx)
	if len(entries) != 1 || string(entries[0]) != `{"id":"dead"}` {
		t.Errorf("queue = %q, want only the dead instance's request back", entries)
	}
	if left, _ := w.Queue.ProcessingEntries(ctx, keys.Processing("alive")); len(left) != 1 {
		t.Errorf("the live instance's processing list was touched: %q", left)
	}
}

func TestEpochWatcherReportsDataLoss(t *testing.T) {
	w := lifecycletest.New(t, 3)
	losses := 0
	ew := NewEpochWatcher(w.RDB, EpochWatcherConfig{}, func() { losses++ })
	for range 2 {
		if err := ew.Check(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if losses != 1 {
		t.Fatalf("losses = %d after a fresh start, want 1", losses)
	}
	w.Redis.Flush()
	if err := ew.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	if losses != 2 {
		t.Errorf("losses = %d after FLUSHALL, want 2", losses)
	}
}

func TestLostLeaseFenceBlocksEveryWrite(t *testing.T) {
	w := lifecycletest.New(t, 3)
	n := w.Sim.CreateIssue(lifecycletest.Repo, "dead", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
	orphan := w.Sim.CreateIssue(lifecycletest.Repo, "orphan", "", "agent-smith", lifecycletest.Label(lifecycle.Enqueued))
	deadRun(t, w, n, "ghost", 1)
	lost := func(context.Context) error { return errors.New("lease lost") }
	writes := len(w.Sim.Writes())
	d := NewStaleJobDetector(w.RDB, w.Claims, StaleJobDetectorConfig{Fence: lost})
	if err := d.FastCycle(t.Context()); err == nil {
		t.Error("FastCycle reported no error although the fence refused the write")
	}
	r := NewEnqueuedReconciler(w.RDB, w.Queue, w.Claims, EnqueuedReconcilerConfig{Fence: lost})
	_ = r.slowKicked(t.Context())
	if got := len(w.Sim.Writes()); got != writes {
		t.Errorf("%d label writes by a leader whose lease was lost", got-writes)
	}
	if s := w.State(t, n); s != lifecycle.InProgress {
		t.Errorf("state %s, want untouched in-progress", s)
	}
	if len(w.Requests(t)) != 0 {
		t.Errorf("orphan %d re-pushed by a leader whose lease was lost", orphan)
	}
}

func TestEpochIsNotWrittenByAFencedOutLeader(t *testing.T) {
	w := lifecycletest.New(t, 3)
	losses := 0
	fenced := NewEpochWatcher(w.RDB, EpochWatcherConfig{Fence: func(context.Context) error { return errors.New("lease lost") }},
		func() { losses++ })
	if err := fenced.Check(t.Context()); err == nil {
		t.Error("a fenced-out check reported success")
	}
	if n, _ := w.RDB.Exists(t.Context(), keys.Epoch()).Result(); n != 0 || losses != 0 {
		t.Fatalf("epoch written (%d) or loss reported (%d) without the lease", n, losses)
	}
	// The next leader still sees the loss.
	if err := NewEpochWatcher(w.RDB, EpochWatcherConfig{}, func() { losses++ }).Check(t.Context()); err != nil || losses != 1 {
		t.Errorf("next leader: err %v, losses %d, want the loss reported once", err, losses)
	}
}

func TestSweeperClaimsTriggersNoWebhookBroughtIn(t *testing.T) {
	w := lifecycletest.New(t, 3)
	missed := w.Sim.CreateIssue(lifecycletest.Repo, "webhook refused with 503", "", "agent-smith")
	done := w.Sim.CreateIssue(lifecycletest.Repo, "finished", "", "agent-smith", lifecycletest.Label(lifecycle.Done))
	untriggered := w.Sim.CreateIssue(lifecycletest.Repo, "no trigger", "")
	s := NewTriggerSweeper(w.Claims, TriggerSweeperConfig{})
	if err := s.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := w.State(t, missed); st != lifecycle.Enqueued {
		t.Errorf("missed trigger is %s, want enqueued", st)
	}
	if st := w.State(t, done); st != lifecycle.Done {
		t.Errorf("done ticket is %s, want untouched", st)
	}
	if st := w.State(t, untriggered); st != lifecycle.Pending {
		t.Errorf("untriggered ticket is %s, want untouched", st)
	}
	reqs := w.Requests(t)
	if len(reqs) != 1 || reqs[0].Source != lifecycle.SourceSweep {
		t.Errorf("queue = %+v, want one sweep request", reqs)
	}
}

// A project that polls is the Poller's to list: the sweeper reads
// lifecycle.Project.PollInterval and leaves it alone, so a triggered ticket
// is not listed twice per cycle.
func TestSweeperLeavesPolledProjectsToThePoller(t *testing.T) {
	w := lifecycletest.New(t, 3)
	w.Claims.Projects()[lifecycletest.Project].PollInterval = time.Minute
	n := w.Sim.CreateIssue(lifecycletest.Repo, "the poller's", "", "agent-smith")
	if err := NewTriggerSweeper(w.Claims, TriggerSweeperConfig{}).Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := w.State(t, n); st != lifecycle.Pending {
		t.Errorf("ticket of a polled project is %s after the sweep, want pending (the poller lists it)", st)
	}
	w.Claims.Projects()[lifecycletest.Project].PollInterval = 0
	if err := NewTriggerSweeper(w.Claims, TriggerSweeperConfig{}).Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := w.State(t, n); st != lifecycle.Enqueued {
		t.Errorf("ticket of a webhook-only project is %s after the sweep, want enqueued", st)
	}
}

// The slow cycle reads the run state of every listed in-progress ticket in
// one batch (runstate.InspectMany) and decides as the per-ticket reads did:
// a ticket with a heartbeat stays, one without is reverted and claimed
// again with the attempt after its last one. In a steady state (every
// ticket running) its Redis work is that one round trip, whatever the
// number of tickets.
func TestSlowCycleBatchedReadsDecideAsPerTicketReads(t *testing.T) {
	w := lifecycletest.New(t, 5)
	ctx := t.Context()
	var running, orphans []int
	for i := range 12 {
		n := w.Sim.CreateIssue(lifecycletest.Repo, "t", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
		if i%3 == 0 {
			orphans = append(orphans, n)
			// A dead run: it ran attempt 1+i%2, its heartbeat is gone.
			deadRun(t, w, n, "ghost", 1+i%2)
			if _, err := runstate.Evict(ctx, w.RDB, lifecycletest.Ref(n), "ghost|webhook|0|tok"); err != nil {
				t.Fatal(err)
			}
			continue
		}
		running = append(running, n)
		deadRun(t, w, n, "alive", 1)
	}
	d := NewStaleJobDetector(w.RDB, w.Claims, StaleJobDetectorConfig{})
	if err := d.SlowCycle(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range running {
		if s := w.State(t, n); s != lifecycle.InProgress {
			t.Errorf("running ticket %d is %s, want in-progress", n, s)
		}
	}
	want := map[platforms.Ref]int{}
	for i, n := range orphans {
		if s := w.State(t, n); s != lifecycle.Enqueued {
			t.Errorf("orphan %d is %s, want enqueued again", n, s)
		}
		want[lifecycletest.Ref(n)] = 2 + (3*i)%2
	}
	reqs := w.Requests(t)
	if len(reqs) != len(orphans) {
		t.Fatalf("queue = %+v, want one request per orphan", reqs)
	}
	for _, r := range reqs {
		if want[r.Ref] != r.Attempt {
			t.Errorf("request %s attempt %d, want %d (the attempt after its last run)", r.Ref, r.Attempt, want[r.Ref])
		}
	}
	// Steady state now: the orphans are enqueued, only running tickets
	// are in progress.
	rt := redistest.CountRoundTrips(w.RDB)
	if err := d.SlowCycle(ctx); err != nil {
		t.Fatal(err)
	}
	if rt.N() != 1 {
		t.Errorf("steady slow cycle over %d running tickets: %d Redis round trips, want 1", len(running), rt.N())
	}
}
