package lifecycle_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
)

// Every change a claim and a run make reaches the observer, in order, with
// the fields metrics and the audit stream depend on.
func TestObserverSeesEveryTransitionOfARun(t *testing.T) {
	w := lifecycletest.New(t, 3)
	rec := &lifecycletest.Recorder{}
	claims := claim.NewService(w.RDB, w.Queue, w.Projects, claim.Config{
		Instance: "claimer", Labels: w.Labels, Logger: zaptest.NewLogger(t), Observer: rec})
	n := w.Sim.CreateIssue(lifecycletest.Repo, "observe me", "", "agent-smith")
	ref := lifecycletest.Ref(n)
	if _, err := claims.Claim(t.Context(), ref, lifecycle.SourceWebhook, 1); err != nil {
		t.Fatal(err)
	}
	if res, err := claims.Claim(t.Context(), ref, lifecycle.SourcePoll, 1); err != nil || res.Outcome != lifecycle.NotEligible {
		t.Fatalf("second claim = %+v, %v; want not eligible", res, err)
	}
	w.Projects[lifecycletest.Project].Pipeline.Command = []string{"sh", "-c", "sleep 0.05"}
	ex := consumer.NewExecutor(w.RDB, w.Queue, w.Projects, consumer.ExecutorConfig{
		Instance: "runner", Concurrency: 1, WorkDir: filepath.Join(t.TempDir(), "work"), TakeWait: 100 * time.Millisecond,
		Logger: zaptest.NewLogger(t), Observer: rec})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(ctx) }()
	defer func() { cancel(); <-done }()
	// The executor emits right after the tracker accepted the write, so the
	// tracker can show Done a moment before the event is recorded.
	eventually.Wait(t, 10*time.Second, "ticket done and its event recorded", func() bool {
		return w.State(t, n) == lifecycle.Done && len(rec.Events()) >= 4
	})

	type row struct {
		kind            lifecycle.EventKind
		from, to        lifecycle.State
		outcome, source string
		instance        string
	}
	var got []row
	evs := rec.Events()
	for _, ev := range evs {
		got = append(got, row{ev.Kind, ev.From, ev.To, ev.Outcome, ev.Source, ev.Instance})
	}
	want := []row{
		{lifecycle.EventTransition, lifecycle.Pending, lifecycle.Enqueued, "claimed", lifecycle.SourceWebhook, "claimer"},
		{lifecycle.EventClaim, lifecycle.Enqueued, lifecycle.Enqueued, "not_eligible", lifecycle.SourcePoll, "claimer"},
		{lifecycle.EventTransition, lifecycle.Enqueued, lifecycle.InProgress, "started", lifecycle.SourceWebhook, "runner"},
		{lifecycle.EventTransition, lifecycle.InProgress, lifecycle.Done, "succeeded", lifecycle.SourceWebhook, "runner"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events:\n got %+v\nwant %+v", got, want)
	}
	if evs[0].RequestID == "" || evs[0].RequestID != evs[2].RequestID || evs[2].RequestID != evs[3].RequestID {
		t.Errorf("request ids do not follow the run: %q %q %q", evs[0].RequestID, evs[2].RequestID, evs[3].RequestID)
	}
	if evs[2].Wait <= 0 {
		t.Errorf("started event has no queue wait: %v", evs[2].Wait)
	}
	if evs[3].Run < 50*time.Millisecond {
		t.Errorf("done event's run time %v is shorter than the pipeline's sleep", evs[3].Run)
	}
	b, err := json.Marshal(evs[3])
	if err != nil {
		t.Fatal(err)
	}
	var back lifecycle.Event
	if err := json.Unmarshal(b, &back); err != nil || back.From != lifecycle.InProgress || back.To != lifecycle.Done ||
		back.Run != evs[3].Run.Truncate(time.Millisecond) {
		t.Errorf("event JSON round trip: %s → %+v, %v", b, back, err)
	}
	// Durations are milliseconds under _ms names, never nanoseconds.
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if ms, ok := raw["run_ms"].(float64); !ok || int64(ms) != evs[3].Run.Milliseconds() || raw["run"] != nil {
		t.Errorf("event JSON durations: %s", b)
	}
}
