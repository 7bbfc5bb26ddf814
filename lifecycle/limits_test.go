package lifecycle_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/eventually"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// pipeline.concurrency caps the project's runs across consumers: with 3
// workers and a limit of 1, runs never overlap, the others wait in the
// delayed set, and nobody's attempt is used up by waiting.
func TestProjectConcurrencyLimit(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	p := w.Projects[lifecycletest.Project]
	p.Limits.Concurrency = 1
	// mkdir is atomic: a second run while one holds the lock records an overlap.
	p.Pipeline.Command = []string{"sh", "-c", `mkdir "$D/lock" || echo "$AGENTSMITH_TICKET_ID" >> "$D/overlaps"
echo "$AGENTSMITH_ATTEMPT" >> "$D/runs"
touch "$D/started-$AGENTSMITH_ATTEMPT-$$"
while [ ! -f "$D/gate" ]; do sleep 0.02; done
sleep 0.1; rmdir "$D/lock" 2>/dev/null; exit 0`}
	runWorld(t, w, dir, 3)
	var ns []int
	for i := range 3 {
		ns = append(ns, claim(t, w, fmt.Sprint("limited ", i)))
	}
	eventually.Wait(t, 10*time.Second, "one run to start", func() bool { return len(runs(t, dir)) == 1 })
	// The two others are given back while the first holds the only slot.
	eventually.Wait(t, 10*time.Second, "the others to wait in the delayed set", func() bool {
		d, _ := w.Queue.DelayedEntries(t.Context())
		return len(d) >= 1
	})
	if n, _ := w.RDB.ZCard(t.Context(), keys.ProjectSlots(lifecycletest.Project)).Result(); n != 1 {
		t.Errorf("project semaphore holds %d runs, want 1", n)
	}
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		eventually.Wait(t, 20*time.Second, "every ticket to reach done", func() bool { return w.State(t, n) == lifecycle.Done })
	}
	if b, err := os.ReadFile(filepath.Join(dir, "overlaps")); err == nil {
		t.Errorf("runs overlapped despite concurrency 1: %q", b)
	}
	if got := runs(t, dir); !slices.Equal(got, []string{"1", "1", "1"}) {
		t.Errorf("attempts %q: waiting for a slot must not use up an attempt", got)
	}
	eventually.Wait(t, 5*time.Second, "the slots to be released", func() bool {
		n, _ := w.RDB.ZCard(t.Context(), keys.ProjectSlots(lifecycletest.Project)).Result()
		return n == 0
	})
}

// The semaphores at the Redis level: all or nothing across project and
// token, a token's semaphore shared by projects, dead runs' places expiring
// with the heartbeat TTL, and a release freeing the places at once.
func TestConcurrencySlots(t *testing.T) {
	w := lifecycletest.New(t, 3)
	ctx := t.Context()
	now := time.UnixMilli(1_800_000_000_000)
	ttl := 2 * time.Second
	tokenKey := keys.TokenSlots(lifecycle.TokenID("secret-token"))
	if tokenKey == keys.TokenSlots("secret-token") || len(lifecycle.TokenID("secret-token")) != 24 {
		t.Fatal("token semaphore must be named by a digest, never by the token")
	}
	projA := []lifecycle.Slot{{Key: keys.ProjectSlots("a"), Limit: 2}, {Key: tokenKey, Limit: 2}}
	projB := []lifecycle.Slot{{Key: keys.ProjectSlots("b"), Limit: 5}, {Key: tokenKey, Limit: 2}}
	take := func(id string, at time.Time, slots []lifecycle.Slot) (lifecycle.TakeResult, string) {
		t.Helper()
		ref := platforms.Ref{Platform: "github", Project: "x", ID: id}
		res, full, err := lifecycle.TakeRunLimited(ctx, w.RDB, lifecycle.RunRecord{Ref: ref, Instance: "i", Token: "tok-" + id, Attempt: 1}, ttl, at, slots)
		if err != nil {
			t.Fatal(err)
		}
		return res, full
	}
	if res, _ := take("1", now, projA); res != lifecycle.RunTaken {
		t.Fatalf("first take %v", res)
	}
	if res, _ := take("1", now, projA); res != lifecycle.RunHeld {
		t.Fatalf("second take of the same ticket %v, want held", res)
	}
	if res, _ := take("2", now, projB); res != lifecycle.RunTaken {
		t.Fatalf("project b %v", res)
	}
	// The token's two places are used (one by a, one by b).
	res, full := take("3", now, projB)
	if res != lifecycle.RunLimited || full != tokenKey {
		t.Fatalf("third run on the token: %v %q, want limited by the token", res, full)
	}
	if n, _ := w.RDB.ZCard(ctx, keys.ProjectSlots("b")).Result(); n != 1 {
		t.Errorf("a limited take left %d places in project b's semaphore, want only run 2's", n)
	}
	if n, _ := w.RDB.Exists(ctx, keys.Heartbeat("github:3")).Result(); n != 0 {
		t.Error("a limited take set the heartbeat")
	}
	// Releasing run 2 frees its places at once.
	if _, err := lifecycle.ReleaseRun(ctx, w.RDB, platforms.Ref{Platform: "github", Project: "x", ID: "2"}, "tok-2", true); err != nil {
		t.Fatal(err)
	}
	if res, _ := take("3", now, projB); res != lifecycle.RunTaken {
		t.Fatalf("after a release: %v", res)
	}
	// Run 1's replica dies: nobody releases it. Its places expire with the
	// heartbeat TTL, unless renewed.
	if res, _ := take("4", now.Add(ttl-time.Millisecond), projB); res != lifecycle.RunLimited {
		t.Fatalf("before the TTL: %v", res)
	}
	if err := lifecycle.RenewSlots(ctx, w.RDB, []string{tokenKey}, "tok-3", now.Add(10*ttl)); err != nil {
		t.Fatal(err)
	}
	if res, _ := take("4", now.Add(ttl), projB); res != lifecycle.RunTaken {
		t.Fatalf("after the dead run's TTL: %v, want its place freed", res)
	}
	if res, _ := take("5", now.Add(ttl), projB); res != lifecycle.RunLimited {
		t.Fatalf("run 3 renewed its place; want the token full, got %v", res)
	}
}

// A request whose attempt is below the ticket's last one is stale (an old
// retry that outlived a re-trigger) and takes nothing; the same attempt
// (a hand-back, a re-push) and later ones run.
func TestStaleRequestTakesNoRun(t *testing.T) {
	w := lifecycletest.New(t, 3)
	ctx := t.Context()
	ref := platforms.Ref{Platform: "github", Project: "x", ID: "9"}
	if err := w.RDB.HSet(ctx, keys.Attempts(), ref.Key(), 2).Err(); err != nil {
		t.Fatal(err)
	}
	take := func(attempt int) lifecycle.TakeResult {
		res, _, err := lifecycle.TakeRunLimited(ctx, w.RDB, lifecycle.RunRecord{Ref: ref, Token: fmt.Sprint("t", attempt), Attempt: attempt}, time.Minute, time.Now(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := take(1); res != lifecycle.RunStale {
		t.Fatalf("attempt 1 after attempt 2: %v, want stale", res)
	}
	if n, _ := w.RDB.Exists(ctx, keys.Heartbeat(ref.Key())).Result(); n != 0 {
		t.Fatal("a stale request set the heartbeat")
	}
	if res := take(2); res != lifecycle.RunTaken {
		t.Fatalf("attempt 2 again (hand-back): %v", res)
	}
}
