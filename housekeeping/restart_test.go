package housekeeping

import (
	"context"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// Redis rolled back to an older snapshot: the epoch survived (no wipe is
// seen), the in-flight index holds a run that ended long ago with its
// heartbeat expired, and the run that owns the ticket now — started after
// the snapshot on a live replica — lost its heartbeat with the restart.
// Its owner still runs the pipeline until its next renewal fails, so
// neither cycle may revert the ticket (and so start a second run) until
// Redis has been up longer than the heartbeat TTL; after that a missing
// heartbeat is proof again and the ticket is reverted and claimed.
func TestNoRevertWhileRedisJustRestarted(t *testing.T) {
	w := lifecycletest.New(t, 3)
	n := w.Sim.CreateIssue(lifecycletest.Repo, "running on a live replica", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
	ref := lifecycletest.Ref(n)
	w.Redis.Restart() // the rollback: uptime starts again
	// What the old snapshot brought back: a record of an ended run whose
	// heartbeat expired while the dump sat on disk, and the epoch.
	old := runstate.Record{Ref: ref, Instance: "r1.1", Token: "r1.1|webhook|0|old", Attempt: 1}
	if took, err := runstate.Take(t.Context(), w.RDB, old, runstate.TakeArgs{TTL: time.Minute, Now: time.Now()}); err != nil || took.Result != runstate.Taken {
		t.Fatalf("take: %v %v", took, err)
	}
	if err := w.RDB.Del(t.Context(), keys.Heartbeat(ref.Key())).Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.RDB.Set(t.Context(), keys.Epoch(), "survived", 0).Err(); err != nil {
		t.Fatal(err)
	}
	const grace = 2 * time.Second
	d := NewStaleJobDetector(w.RDB, w.Claims, StaleJobDetectorConfig{RestartGrace: grace})
	if err := d.FastCycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := d.SlowCycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s := w.State(t, n); s != lifecycle.InProgress {
		t.Fatalf("ticket is %s right after the restart, want in-progress: its owner may still be running it", s)
	}
	if len(w.Requests(t)) != 0 {
		t.Fatal("a request was queued for a ticket whose owner may still be running it")
	}
	// Once Redis has been up past the grace, the missing heartbeat counts.
	eventually.Wait(t, 10*time.Second, "redis uptime to pass the grace", func() bool {
		up, err := redisUptime(t.Context(), w.RDB)
		if err != nil {
			t.Fatal(err)
		}
		return up > grace
	})
	if err := d.FastCycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s := w.State(t, n); s != lifecycle.Enqueued {
		t.Errorf("ticket is %s after the grace, want reverted and claimed again (enqueued)", s)
	}
}

// Redis came back empty while a run held a ticket: the EpochWatcher kicks
// the slow cycle at once, but Redis has been up less than RestartGrace, so
// that cycle reverts nothing. The detector must run it again when the grace
// ends, not at its next slow tick: with both intervals an hour here, only
// the deferred cycle can revert and claim the ticket within the test.
func TestRevertAtRestartGraceNotAtNextSlowTick(t *testing.T) {
	w := lifecycletest.New(t, 3)
	n := w.Sim.CreateIssue(lifecycletest.Repo, "running when Redis was wiped", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
	w.Redis.Restart() // empty: no heartbeat, no in-flight index
	const grace = 2 * time.Second
	d := NewStaleJobDetector(w.RDB, w.Claims, StaleJobDetectorConfig{
		FastInterval: time.Hour, SlowInterval: time.Hour, RestartGrace: grace})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(ctx) }()
	defer func() { cancel(); <-done }()
	d.Kick() // what the EpochWatcher does on seeing the epoch gone
	eventually.Wait(t, 15*time.Second, "the ticket reverted and claimed again after the restart grace", func() bool {
		return w.State(t, n) == lifecycle.Enqueued
	})
	up, err := redisUptime(t.Context(), w.RDB)
	if err != nil {
		t.Fatal(err)
	}
	if up <= grace {
		t.Errorf("reverted at Redis uptime %s, inside the restart grace %s", up, grace)
	}
}
