package housekeeping

import (
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
)

// A request given back at a concurrency limit waits in the delayed set
// with its own enqueue time: its ticket is flagged once it stays Enqueued
// past the threshold. A retry's enqueue time is its due time, so a ticket
// waiting out its backoff is not.
func TestStuckDetectorSeesTheDelayedSet(t *testing.T) {
	w, obs, claims, now := stuckWorld(t)
	limited := w.Sim.CreateIssue(lifecycletest.Repo, "at its limit", "", "agent-smith", lifecycletest.Label(lifecycle.Enqueued))
	backoff := w.Sim.CreateIssue(lifecycletest.Repo, "retry later", "", "agent-smith", lifecycletest.Label(lifecycle.Enqueued))
	for n, at := range map[int]time.Time{limited: now.Add(-2 * time.Minute), backoff: now.Add(time.Hour)} {
		req := lifecycle.PipelineRequest{ID: "req-" + lifecycletest.Ref(n).ID, Ref: lifecycletest.Ref(n), Source: "webhook", Attempt: 1, EnqueuedAt: at}
		if err := w.Queue.Delay(t.Context(), req.Encode(), time.Second); err != nil {
			t.Fatal(err)
		}
	}
	claims.Projects()[lifecycletest.Project].Stuck = lifecycle.StuckThresholds{EnqueuedAfter: time.Minute, InProgressAfter: 5 * time.Minute}
	d := NewStuckDetector(w.RDB, w.Queue, claims, StuckDetectorConfig{Clock: func() time.Time { return now }})
	if err := d.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := obs.Kind(lifecycle.EventStuck)
	if len(got) != 1 || got[0].Ref != lifecycletest.Ref(limited) || got[0].From != lifecycle.Enqueued {
		t.Errorf("stuck events %+v, want one for the ticket held at its concurrency limit", got)
	}
}
