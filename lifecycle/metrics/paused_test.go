package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/metrics"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/platforms"
)

func TestProjectPausedGauge(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	m := metrics.New(metrics.Config{Redis: rdb, Queue: queue.New(rdb, keys.Queue())})
	ctx := t.Context()
	if n := testutil.CollectAndCount(m.Registry(), "agentsmith_project_paused"); n != 0 {
		t.Fatalf("%d paused series before any pause", n)
	}
	if err := lifecycle.PauseProject(ctx, rdb, "app", "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP agentsmith_project_paused 1 for each project whose queue is paused (agentsmithctl pause): its requests wait, no run starts.
# TYPE agentsmith_project_paused gauge
agentsmith_project_paused{project="app"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "agentsmith_project_paused"); err != nil {
		t.Error(err)
	}
	if _, _, err := lifecycle.ResumeProject(ctx, rdb, "app"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(m.Registry(), "agentsmith_project_paused"); n != 0 {
		t.Errorf("%d paused series after resume", n)
	}
}

// The tickets awaiting approval are counted per project from the parked
// index at scrape time; one unparked is no longer counted.
func TestAwaitingApprovalGauge(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	m := metrics.New(metrics.Config{Redis: rdb, Queue: queue.New(rdb, keys.Queue())})
	ctx := t.Context()
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	refs := []platforms.Ref{{Platform: "github", Project: "app", ID: "o/app#1"}, {Platform: "github", Project: "app", ID: "o/app#2"},
		{Platform: "gitlab", Project: "api", ID: "g/api#3"}}
	for _, r := range refs {
		if err := lifecycle.Park(ctx, rdb, lifecycle.ParkedEntry{Ref: r, Stage: "implement", Since: at}); err != nil {
			t.Fatal(err)
		}
	}
	if err := lifecycle.Unpark(ctx, rdb, refs[0]); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP agentsmith_awaiting_approval Tickets parked at an approval gate, waiting for a person's decision, by project (the parked index the status page lists).
# TYPE agentsmith_awaiting_approval gauge
agentsmith_awaiting_approval{project="api"} 1
agentsmith_awaiting_approval{project="app"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "agentsmith_awaiting_approval"); err != nil {
		t.Error(err)
	}
}
