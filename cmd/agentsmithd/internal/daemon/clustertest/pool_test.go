package clustertest_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// A pool's lists on a cluster: the claim pushes into pool gpu's queue, a
// replica of gpu alone takes from it, and a failed attempt's retry is
// promoted from the delayed set into it; every script touching them runs
// in one hash slot (no CROSSSLOT, every key tagged).
func TestClusterPool(t *testing.T) {
	w := newWorld(t)
	w.startDaemon(w.config("replica-gpu", "concurrency: 2, pools: [gpu], ", "    pool: gpu\n"))
	ok := w.sim.CreateIssue(gh.Repo, "gpu work", "", "agent-smith")
	failing := w.sim.CreateIssue(gh.Repo, "gpu work that will fail", "", "agent-smith")
	w.waitState(ok, 30*time.Second, lifecycle.Done)
	w.waitState(failing, 30*time.Second, lifecycle.Failed)
	if got := w.lifecyclePath(failing); len(got) != 5 {
		t.Errorf("failing ticket's transitions = %q, want two attempts", got)
	}
	if n, err := w.cluster.Client(t).Exists(context.Background(), keys.Queue()).Result(); err != nil || n != 0 {
		t.Errorf("the default pool's queue exists (%d, %v): a gpu request went there", n, err)
	}
	w.checkKeysTagged()
}
