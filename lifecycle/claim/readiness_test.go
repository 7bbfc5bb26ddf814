package claim_test

import (
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// A claim of a ticket with open blockers is NotEligible "blocked by …" and
// records it; a close event retries only the tickets the closed one blocked.
func TestBlockedClaimIsRecordedAndRetriedByItsBlockersClose(t *testing.T) {
	w := lifecycletest.New(t, 3)
	w.Projects[lifecycletest.Project].RequireNoOpenBlockers = true
	a := w.Sim.CreateIssue(lifecycletest.Repo, "blocker a", "")
	c := w.Sim.CreateIssue(lifecycletest.Repo, "blocker c", "")
	b1 := w.Sim.CreateIssue(lifecycletest.Repo, "blocked by a and c", "", "agent-smith")
	b2 := w.Sim.CreateIssue(lifecycletest.Repo, "blocked by c", "", "agent-smith")
	for blocked, blockers := range map[int][]int{b1: {a, c}, b2: {c}} {
		for _, x := range blockers {
			if err := w.Sim.AddBlocker(lifecycletest.Repo, blocked, x); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := w.Sim.Stats().Calls["GET /repos/{owner}/{repo}/issues/{number}/dependencies/blocked_by"]
	res, err := w.Claims.Claim(t.Context(), lifecycletest.Ref(b1), lifecycle.SourceWebhook, 1)
	if want := "blocked by " + lifecycletest.Ref(a).ID + ", " + lifecycletest.Ref(c).ID; err != nil || res.Outcome != lifecycle.NotEligible || res.Reason != want {
		t.Fatalf("claim = %+v, %v; want not eligible %q", res, err, want)
	}
	if n := w.Sim.Stats().Calls["GET /repos/{owner}/{repo}/issues/{number}/dependencies/blocked_by"] - before; n != 1 {
		t.Errorf("the readiness check made %d blocker calls, want 1", n)
	}
	if res, err := w.Claims.Claim(t.Context(), lifecycletest.Ref(b2), lifecycle.SourceWebhook, 1); err != nil || !claim.IsBlockedReason(res.Reason) {
		t.Fatalf("claim = %+v, %v; want blocked", res, err)
	}
	if err := w.Sim.SetOpen(lifecycletest.Repo, c, false); err != nil {
		t.Fatal(err)
	}
	// c's close retries both; b1 is still blocked by a, b2 is claimed.
	if n, err := w.Claims.RetryBlocked(t.Context(), lifecycletest.Project, lifecycletest.Ref(c).ID, lifecycle.SourceWebhook); err != nil || n != 1 {
		t.Fatalf("retry after c closed: %d claimed, %v; want 1", n, err)
	}
	if s := w.State(t, b2); s != lifecycle.Enqueued {
		t.Fatalf("b2 is %s, want enqueued", s)
	}
	blocked, _ := w.RDB.HGetAll(t.Context(), keys.Blocked(lifecycletest.Project)).Result()
	if len(blocked) != 1 || blocked[lifecycletest.Ref(b1).ID] != lifecycletest.Ref(a).ID {
		t.Fatalf("blocked = %v, want only b1, by a", blocked)
	}
	// A close of an unrelated ticket retries nothing.
	if n, err := w.Claims.RetryBlocked(t.Context(), lifecycletest.Project, "acme/app#999", lifecycle.SourceWebhook); err != nil || n != 0 {
		t.Fatalf("unrelated close claimed %d, %v", n, err)
	}
	if err := w.Sim.SetOpen(lifecycletest.Repo, a, false); err != nil {
		t.Fatal(err)
	}
	if n, err := w.Claims.RetryBlocked(t.Context(), lifecycletest.Project, "", lifecycle.SourceSweep); err != nil || n != 1 {
		t.Fatalf("sweep retry: %d claimed, %v; want 1", n, err)
	}
	if n, _ := w.RDB.HLen(t.Context(), keys.Blocked(lifecycletest.Project)).Result(); n != 0 {
		t.Fatalf("%d tickets still recorded as blocked", n)
	}
}
