package runstate_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// The tests read the keys by their specification names (pkg/keys) to check
// the stored layout from outside the package.

func client(t *testing.T) *redis.Client {
	t.Helper()
	return redistest.Start(t).Client(t)
}

func ref(id string) platforms.Ref { return platforms.Ref{Platform: "github", Project: "x", ID: id} }

func take(t *testing.T, rdb *redis.Client, id, token string, attempt int, ttl time.Duration, at time.Time, slots []runstate.Slot) (runstate.TakeResult, string) {
	t.Helper()
	rec := runstate.Record{Ref: ref(id), Instance: "i", Token: token, Attempt: attempt}
	res, err := runstate.Take(t.Context(), rdb, rec, runstate.TakeArgs{TTL: ttl, Now: at, Slots: slots})
	if err != nil {
		t.Fatal(err)
	}
	return res.Result, res.Slot
}

// The semaphores: all or nothing across project and token, a token's
// semaphore shared by projects, dead runs' places expiring with the
// heartbeat TTL, and a release freeing the places at once.
func TestConcurrencySlots(t *testing.T) {
	rdb := client(t)
	ctx := t.Context()
	now := time.UnixMilli(1_800_000_000_000)
	ttl := 2 * time.Second
	token := runstate.TokenSlot("digest", 2)
	projA := []runstate.Slot{runstate.ProjectSlot("a", 2), token}
	projB := []runstate.Slot{runstate.ProjectSlot("b", 5), token}
	try := func(id string, at time.Time, slots []runstate.Slot) (runstate.TakeResult, string) {
		t.Helper()
		return take(t, rdb, id, "tok-"+id, 1, ttl, at, slots)
	}
	if res, _ := try("1", now, projA); res != runstate.Taken {
		t.Fatalf("first take %v", res)
	}
	if res, _ := try("1", now, projA); res != runstate.Held {
		t.Fatalf("second take of the same ticket %v, want held", res)
	}
	if res, _ := try("2", now, projB); res != runstate.Taken {
		t.Fatalf("project b %v", res)
	}
	// The token's two places are used (one by a, one by b).
	if key, full, err := runstate.Full(ctx, rdb, projB, now); err != nil || !full || key != token.Key {
		t.Fatalf("Full = %q %v %v, want the token's semaphore full", key, full, err)
	}
	res, full := try("3", now, projB)
	if res != runstate.Limited || full != token.Key {
		t.Fatalf("third run on the token: %v %q, want limited by the token", res, full)
	}
	if n, _ := rdb.ZCard(ctx, keys.ProjectSlots("b")).Result(); n != 1 {
		t.Errorf("a limited take left %d places in project b's semaphore, want only run 2's", n)
	}
	if n, _ := rdb.Exists(ctx, keys.Heartbeat(ref("3").Key())).Result(); n != 0 {
		t.Error("a limited take set the heartbeat")
	}
	// Releasing run 2 frees its places at once.
	if _, err := runstate.Release(ctx, rdb, ref("2"), "tok-2", true); err != nil {
		t.Fatal(err)
	}
	if _, full, _ := runstate.Full(ctx, rdb, projB, now); full {
		t.Error("Full after a release: still full")
	}
	if res, _ := try("3", now, projB); res != runstate.Taken {
		t.Fatalf("after a release: %v", res)
	}
	// Run 1's replica dies: nobody releases it. Its places expire with the
	// heartbeat TTL, unless renewed.
	if res, _ := try("4", now.Add(ttl-time.Millisecond), projB); res != runstate.Limited {
		t.Fatalf("before the TTL: %v", res)
	}
	if err := runstate.RenewSlots(ctx, rdb, []runstate.Slot{token}, "tok-3", now.Add(10*ttl)); err != nil {
		t.Fatal(err)
	}
	if res, _ := try("4", now.Add(ttl), projB); res != runstate.Taken {
		t.Fatalf("after the dead run's TTL: %v, want its place freed", res)
	}
	if res, _ := try("5", now.Add(ttl), projB); res != runstate.Limited {
		t.Fatalf("run 3 renewed its place; want the token full, got %v", res)
	}
}

// A request whose attempt is below the ticket's last one is stale (an old
// retry that outlived a re-trigger) and takes nothing; the same attempt
// (a hand-back, a re-push) and later ones run.
func TestStaleRequestTakesNoRun(t *testing.T) {
	rdb := client(t)
	ctx := t.Context()
	r := ref("9")
	if err := rdb.HSet(ctx, keys.Attempts(), r.Key(), 2).Err(); err != nil {
		t.Fatal(err)
	}
	try := func(attempt int) runstate.TakeResult {
		res, _ := take(t, rdb, "9", fmt.Sprint("t", attempt), attempt, time.Minute, time.Now(), nil)
		return res
	}
	if res := try(1); res != runstate.Stale {
		t.Fatalf("attempt 1 after attempt 2: %v, want stale", res)
	}
	if n, _ := rdb.Exists(ctx, keys.Heartbeat(r.Key())).Result(); n != 0 {
		t.Fatal("a stale request set the heartbeat")
	}
	if res := try(2); res != runstate.Taken {
		t.Fatalf("attempt 2 again (hand-back): %v", res)
	}
	if last, err := runstate.LastAttempt(ctx, rdb, r); err != nil || last != 2 {
		t.Fatalf("LastAttempt = %d %v, want 2", last, err)
	}
}

// A terminal release by the owner forgets the attempt count and the cancel
// request and sets the finished marker; a non-terminal one keeps them; a
// release by a run that lost its heartbeat touches neither the heartbeat nor
// the successor's entry.
func TestReleaseForgetsOnlyWhenOwnerAndTerminal(t *testing.T) {
	rdb := client(t)
	ctx := t.Context()
	r := ref("5")
	if res, _ := take(t, rdb, "5", "old", 1, time.Minute, time.Now(), nil); res != runstate.Taken {
		t.Fatalf("take: %v", res)
	}
	if err := runstate.RequestCancel(ctx, rdb, r, "stop", 0); err != nil {
		t.Fatal(err)
	}
	// Non-terminal: the run ends, its history stays.
	if mine, err := runstate.Release(ctx, rdb, r, "old", false); err != nil || !mine {
		t.Fatalf("release = %v %v", mine, err)
	}
	last, finished, err := runstate.History(ctx, rdb, r, false)
	if err != nil || last != 1 || finished {
		t.Fatalf("after a non-terminal release: last %d finished %v (%v), want 1 false", last, finished, err)
	}
	if c, _ := runstate.RequestedCancel(ctx, rdb, r); c != "stop" {
		t.Fatalf("cancel request %q lost by a non-terminal release", c)
	}
	// A new run owns the ticket; the old token's terminal release is void.
	if res, _ := take(t, rdb, "5", "new", 2, time.Minute, time.Now(), nil); res != runstate.Taken {
		t.Fatalf("second take: %v", res)
	}
	if mine, err := runstate.Release(ctx, rdb, r, "old", true); err != nil || mine {
		t.Fatalf("stale release = %v %v, want not ours", mine, err)
	}
	if tok, _, _ := runstate.Holder(ctx, rdb, r); tok != "new" {
		t.Fatalf("heartbeat %q after a stale release, want the new run's", tok)
	}
	if rec, ok, _ := runstate.RunOf(ctx, rdb, r); !ok || rec.Token != "new" {
		t.Fatalf("in-flight entry %+v %v after a stale release, want the new run's", rec, ok)
	}
	// The owner's terminal release forgets.
	if mine, err := runstate.Release(ctx, rdb, r, "new", true); err != nil || !mine {
		t.Fatalf("terminal release = %v %v", mine, err)
	}
	last, finished, err = runstate.History(ctx, rdb, r, false)
	if err != nil || last != 0 || !finished {
		t.Fatalf("after a terminal release: last %d finished %v (%v), want 0 true", last, finished, err)
	}
	if c, _ := runstate.RequestedCancel(ctx, rdb, r); c != "" {
		t.Fatalf("cancel request %q kept by a terminal release", c)
	}
	if ttl := rdb.PTTL(ctx, keys.Finished(r.Key())).Val(); ttl <= 0 || ttl > keys.FinishedTTL {
		t.Fatalf("finished marker TTL %s", ttl)
	}
	if running, _ := runstate.Running(ctx, rdb, r); running {
		t.Fatal("heartbeat left after the owner's release")
	}
}

// Inspect reports each run with its heartbeat holder and its owner's
// liveness; Evict fences a run out without touching its entry, which is
// what StaleJobDetector then finds.
func TestInspectAndEvict(t *testing.T) {
	rdb := client(t)
	ctx := t.Context()
	if res, _ := take(t, rdb, "1", "tok-1", 1, time.Minute, time.Now(), nil); res != runstate.Taken {
		t.Fatal(res)
	}
	if res, _ := take(t, rdb, "2", "tok-2", 1, time.Minute, time.Now(), nil); res != runstate.Taken {
		t.Fatal(res)
	}
	if err := rdb.Set(ctx, keys.Instance("i"), "1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := runstate.Evict(ctx, rdb, ref("2"), "someone-else"); err != nil || ok {
		t.Fatalf("Evict with the wrong token = %v %v", ok, err)
	}
	if ok, err := runstate.Evict(ctx, rdb, ref("2"), "tok-2"); err != nil || !ok {
		t.Fatalf("Evict = %v %v", ok, err)
	}
	runs, err := runstate.Inspect(ctx, rdb)
	if err != nil || len(runs) != 2 {
		t.Fatalf("Inspect = %+v %v", runs, err)
	}
	if r := runs[0]; r.Field != ref("1").Key() || r.Holder != "tok-1" || r.HeartbeatLeft <= 0 || !r.OwnerAlive {
		t.Errorf("live run seen as %+v", r)
	}
	if r := runs[1]; r.Field != ref("2").Key() || r.Holder != "" || r.HeartbeatLeft != 0 || r.Record.Token != "tok-2" {
		t.Errorf("evicted run seen as %+v", r)
	}
	if n, err := runstate.Count(ctx, rdb).Result(); err != nil || n != 2 {
		t.Errorf("Count = %d %v", n, err)
	}
}

// A cancel request is cleared only while it still says the cause read, so a
// newer request is never lost.
func TestClearCancelKeepsANewerRequest(t *testing.T) {
	rdb := client(t)
	ctx := t.Context()
	r := ref("7")
	if err := runstate.RequestCancel(ctx, rdb, r, "newer", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := runstate.ClearCancel(ctx, rdb, r, "older"); err != nil {
		t.Fatal(err)
	}
	if c, _ := runstate.RequestedCancel(ctx, rdb, r); c != "newer" {
		t.Fatalf("cancel request %q, want the newer one kept", c)
	}
	if err := runstate.ClearCancel(ctx, rdb, r, ""); err != nil {
		t.Fatal(err)
	}
	if c, _ := runstate.RequestedCancel(ctx, rdb, r); c != "" {
		t.Fatalf("cancel request %q after clearing all", c)
	}
	if got := runstate.CancelKey(r); got != keys.Cancel(r.Key()) {
		t.Fatalf("CancelKey = %q", got)
	}
}

// Run logs come back oldest attempt first and expire with the ticket's
// history.
func TestRunLogs(t *testing.T) {
	rdb := client(t)
	ctx := t.Context()
	r := ref("3")
	for _, a := range []int{3, 1, 2} {
		if err := runstate.RecordRunLog(ctx, rdb, r, runstate.RunLog{Attempt: a, Instance: "i", Path: fmt.Sprint("/a", a)}); err != nil {
			t.Fatal(err)
		}
	}
	rls, err := runstate.RunLogs(ctx, rdb, r)
	if err != nil || len(rls) != 3 || rls[0].Attempt != 1 || rls[2].Path != "/a3" {
		t.Fatalf("RunLogs = %+v %v", rls, err)
	}
	if ttl := rdb.TTL(ctx, keys.RunLogs(r.Key())).Val(); ttl <= 0 || ttl > keys.FinishedTTL {
		t.Fatalf("run logs TTL %s", ttl)
	}
}

// A free run lock on a Redis that started less than the restart grace ago
// proves nothing (the restart may have lost it): Take takes nothing and
// says how long to wait, while a held lock still answers Held. The uptime
// is the node's own, read inside the script.
func TestTakeWaitsOutTheRestartGrace(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := t.Context()
	rec := runstate.Record{Ref: ref("1"), Instance: "i", Token: "A", Attempt: 1}
	args := runstate.TakeArgs{TTL: time.Minute, Now: time.Now(), RestartGrace: time.Hour}
	res, err := runstate.Take(ctx, rdb, rec, args)
	if err != nil || res.Result != runstate.Restarting || res.Wait <= 59*time.Minute || res.Wait > time.Hour+time.Second {
		t.Fatalf("take within the grace: %+v %v, want Restarting with about an hour to wait", res, err)
	}
	if n, _ := rdb.Exists(ctx, keys.Heartbeat(rec.Ref.Key())).Result(); n != 0 {
		t.Fatal("a take refused for the restart grace set the heartbeat")
	}
	if res, err := runstate.Take(ctx, rdb, rec, runstate.TakeArgs{TTL: time.Minute, Now: time.Now()}); err != nil || res.Result != runstate.Taken {
		t.Fatalf("take without a grace: %+v %v", res, err)
	}
	other := rec
	other.Token = "B"
	if res, err := runstate.Take(ctx, rdb, other, args); err != nil || res.Result != runstate.Held {
		t.Fatalf("take of a held run within the grace: %+v %v, want Held", res, err)
	}
	srv.Restart() // the lock is lost with everything else
	if res, err := runstate.Take(ctx, rdb, other, args); err != nil || res.Result != runstate.Restarting {
		t.Fatalf("take after the restart: %+v %v, want Restarting", res, err)
	}
}

// A record written before runs were numbered (field "N", no run in the
// JSON) reads as run 1; a retry's attempt 1 is run 2, recorded beside it
// rather than over it, and its later attempts stay in run 2.
func TestRunLogsNumberRuns(t *testing.T) {
	rdb := client(t)
	ctx := t.Context()
	r := ref("4")
	if err := rdb.HSet(ctx, keys.RunLogs(r.Key()), "1", `{"attempt":1,"instance":"i","path":"/old/attempt-1.log"}`).Err(); err != nil {
		t.Fatal(err)
	}
	rls, err := runstate.RunLogs(ctx, rdb, r)
	if err != nil || len(rls) != 1 || rls[0].Run != 1 || rls[0].Path != "/old/attempt-1.log" {
		t.Fatalf("old record = %+v %v, want run 1", rls, err)
	}
	if got := runstate.NextRun(rls, 2); got != 1 {
		t.Errorf("NextRun(attempt 2) = %d, want run 1 going on", got)
	}
	if got := runstate.NextRun(rls, 1); got != 2 {
		t.Errorf("NextRun(attempt 1 again) = %d, want run 2", got)
	}
	if got := runstate.NextRun(nil, 3); got != 1 {
		t.Errorf("NextRun with nothing recorded = %d, want 1", got)
	}
	for _, rl := range []runstate.RunLog{{Run: 2, Attempt: 2, Path: "/r2a2"}, {Run: 2, Attempt: 1, Path: "/r2a1"}} {
		if err := runstate.RecordRunLog(ctx, rdb, r, rl); err != nil {
			t.Fatal(err)
		}
	}
	rls, err = runstate.RunLogs(ctx, rdb, r)
	if err != nil || len(rls) != 3 || rls[0].Path != "/old/attempt-1.log" || rls[1].Path != "/r2a1" || rls[2].Path != "/r2a2" {
		t.Fatalf("RunLogs = %+v %v, want run 1 then run 2's attempts in order", rls, err)
	}
	if got := runstate.NextRun(rls, 3); got != 2 {
		t.Errorf("NextRun(attempt 3) = %d, want run 2 going on", got)
	}
}

// LockWithHistory reads the keys it is given with the lock it took (nil
// for one absent), behind an unless key that stops it, and reads nothing
// for a claim that did not get the lock.
func TestLockWithHistoryReadsKeysWithTheLock(t *testing.T) {
	rdb := client(t)
	ctx := t.Context()
	r := ref("7")
	lockKey := keys.ClaimLock(r.Platform, r.ID)
	present, absent, unless := keys.TriggerActor(r.Key()), keys.TriggerPermission("x", "d"), keys.TriggerActor("github:other")
	if err := rdb.Set(ctx, present, "alice", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	l, err := runstate.LockWithHistory(ctx, rdb, lockKey, "tok", time.Minute, r, unless, present, absent)
	if err != nil || !l.Got {
		t.Fatalf("lock: %+v %v", l, err)
	}
	if v := l.Read[present]; v == nil || *v != "alice" {
		t.Errorf("read %s = %v, want alice", present, v)
	}
	if v, ok := l.Read[absent]; !ok || v != nil {
		t.Errorf("read %s = %v (asked %v), want nil", absent, v, ok)
	}
	if l, err := runstate.LockWithHistory(ctx, rdb, lockKey, "tok2", time.Minute, r, "", present); err != nil || l.Got || l.Holder != "tok" || l.Read != nil {
		t.Errorf("contended lock: %+v %v, want the holder and no reads", l, err)
	}
	if err := rdb.Set(ctx, unless, "record", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	r2 := ref("8")
	if l, err := runstate.LockWithHistory(ctx, rdb, keys.ClaimLock(r2.Platform, r2.ID), "tok", time.Minute, r2, unless, present); err != nil || !l.Stopped || l.Record != "record" || l.Read != nil {
		t.Errorf("stopped lock: %+v %v, want the record and no reads", l, err)
	}
}
