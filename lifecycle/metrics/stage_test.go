package metrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/metrics"
)

// A staged run's end is observed per stage and outcome; a run of a
// project without stages is not.
func TestStageDuration(t *testing.T) {
	m := metrics.New(metrics.Config{})
	for _, ev := range []lifecycle.Event{
		{Kind: lifecycle.EventTransition, Ref: ref, From: lifecycle.InProgress, To: lifecycle.Enqueued, Outcome: "stage succeeded", Run: 30 * time.Second, Stage: "plan"},
		{Kind: lifecycle.EventTransition, Ref: ref, From: lifecycle.InProgress, To: lifecycle.Failed, Outcome: "failed", Run: 2 * time.Minute, Stage: "implement"},
		{Kind: lifecycle.EventTransition, Ref: ref, From: lifecycle.InProgress, To: lifecycle.Done, Outcome: "succeeded", Run: time.Minute},
	} {
		m.Observe(ev)
	}
	if n := testutil.CollectAndCount(m.Registry(), "agentsmith_stage_duration_seconds"); n != 2 {
		t.Errorf("stage duration series = %d, want 2 (plan succeeded, implement failed)", n)
	}
}
