package claim_test

import (
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// A fresh trigger's claim forgets an earlier trigger's run state: its
// gates' rejection count, review and recorded decision, and the stage
// result a send-back left for the first stage.
func TestFreshClaimForgetsTheEarlierRun(t *testing.T) {
	w := lifecycletest.New(t, 1)
	n := w.Sim.CreateIssue(lifecycletest.Repo, "again", "", "agent-smith")
	ref := lifecycletest.Ref(n)
	k := ref.Key()
	left := []string{keys.GateRejections(k), keys.Review(k), keys.GateDecision(k), keys.StageResult(k), keys.SentBack(k)}
	for _, key := range left {
		if err := w.RDB.Set(t.Context(), key, "1", keys.GateTTL).Err(); err != nil {
			t.Fatal(err)
		}
	}
	res, err := w.Claims.Claim(t.Context(), ref, lifecycle.SourceWebhook, 0)
	if err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	for _, key := range left {
		if got, err := w.RDB.Exists(t.Context(), key).Result(); err != nil || got != 0 {
			t.Errorf("%s kept after a fresh claim (%d, %v)", key, got, err)
		}
	}
}
