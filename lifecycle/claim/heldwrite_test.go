package claim_test

import (
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// A claim that learned who added the trigger label while it held the lock
// writes that cache on its way out only where nobody wrote it meanwhile:
// a webhook that found the lock held records the newer trigger's actor
// (mallory re-added the label), which the held write must not overwrite
// with the older one (alice), or the next claim would admit mallory's
// trigger as alice's.
func TestHeldCacheWriteKeepsANewerActor(t *testing.T) {
	w := lifecycletest.New(t, 1)
	ref := lifecycletest.Ref(1)
	key := keys.TriggerActor(ref.Key())
	if err := w.RDB.Set(t.Context(), key, "mallory", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	w.Claims.HoldAndFlush(t.Context(), ref, key, "alice", time.Hour)
	if got, err := w.RDB.Get(t.Context(), key).Result(); err != nil || got != "mallory" {
		t.Errorf("remembered actor %q (%v), want mallory's, written while the claim held its lock", got, err)
	}
}
