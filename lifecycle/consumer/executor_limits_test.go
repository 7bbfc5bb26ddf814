package consumer_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
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
	consumertest.RunWorld(t, w, dir, 3)
	var ns []int
	for i := range 3 {
		ns = append(ns, w.ClaimIssue(t, fmt.Sprint("limited ", i)))
	}
	eventually.Wait(t, 10*time.Second, "one run to start", func() bool { return len(lifecycletest.Runs(t, dir)) == 1 })
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
	if got := lifecycletest.Runs(t, dir); !slices.Equal(got, []string{"1", "1", "1"}) {
		t.Errorf("attempts %q: waiting for a slot must not use up an attempt", got)
	}
	eventually.Wait(t, 5*time.Second, "the slots to be released", func() bool {
		n, _ := w.RDB.ZCard(t.Context(), keys.ProjectSlots(lifecycletest.Project)).Result()
		return n == 0
	})
}

// A token's semaphore is named by a digest, never by the token: keys are
// visible to anyone who can read Redis. (The semaphores' behaviour is
// tested in lifecycle/runstate.)
func TestTokenSemaphoreNamedByDigest(t *testing.T) {
	id := lifecycle.TokenID("secret-token")
	if len(id) != 24 || strings.Contains(runstate.TokenSlot(id, 1).Key, "secret-token") {
		t.Fatalf("token semaphore %q must be named by a digest, never by the token", runstate.TokenSlot(id, 1).Key)
	}
	if id == lifecycle.TokenID("other-token") {
		t.Fatal("two tokens share a semaphore")
	}
}
