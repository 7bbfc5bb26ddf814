package statuspage

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// A staged ticket's page sums each stage's runs from the audit stream,
// lists each finished wait at an approval gate with its decision and who
// made it (as text), and says since when the ticket awaits approval now,
// from the parked index.
func TestTicketPageShowsStagesAndApprovalWaits(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	ctx := t.Context()
	ref := refFor("acme/app#1")
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	run := func(at time.Time, stage string, d time.Duration, to lifecycle.State, outcome string) lifecycle.Event {
		return lifecycle.Event{Kind: lifecycle.EventTransition, At: at, Ref: ref, From: lifecycle.InProgress, To: to, Outcome: outcome,
			Owner: lifecycle.OwnerExecutor, Run: d, Stage: stage}
	}
	decided := func(at time.Time, stage string, d time.Duration, to lifecycle.State, outcome, actor string) lifecycle.Event {
		return lifecycle.Event{Kind: lifecycle.EventTransition, At: at, Ref: ref, From: lifecycle.AwaitingApproval, To: to, Outcome: outcome,
			Owner: lifecycle.OwnerApprovalGate, Stage: stage, Actor: actor, ApprovalWait: d}
	}
	writeEvents(t, audit.NewWriter(rdb, audit.WriterConfig{}), []lifecycle.Event{
		run(t0.Add(2*time.Minute), "plan", 2*time.Minute, lifecycle.AwaitingApproval, "stage succeeded"),
		decided(t0.Add(62*time.Minute), "implement", time.Hour, lifecycle.Enqueued, "rejected", "<b>mallory</b>"),
		run(t0.Add(65*time.Minute), "plan", 3*time.Minute, lifecycle.AwaitingApproval, "stage succeeded"),
	})
	parkedAt := t0.Add(65 * time.Minute)
	if err := lifecycle.Park(ctx, rdb, lifecycle.ParkedEntry{Ref: ref, Stage: "implement", Since: parkedAt}); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, keys.GateEscalated(ref.Key()), lifecycle.ParkedStamp(parkedAt), keys.GateTTL).Err(); err != nil {
		t.Fatal(err)
	}
	now := parkedAt.Add(2 * time.Hour)
	h := New(Config{RDB: rdb, Queue: testQueue(rdb), Instance: "replica-a", Token: "s3cret", Clock: func() time.Time { return now }})
	body := get(t, h, "/status/ticket?ticket="+url.QueryEscape("github:acme/app#1"), "Bearer s3cret").Body.String()
	for _, want := range []string{
		`<table id="stages">`, "<tr><td>plan</td><td>2</td><td>5 m 0 s</td><td>3 m 0 s</td><td>stage succeeded</td></tr>",
		`<table id="approvals">`, "<tr><td>implement</td><td>1 h 0 m</td><td>10:02:00</td><td>rejected</td><td>&lt;b&gt;mallory&lt;/b&gt;</td></tr>",
		`id="parked">awaits approval of stage implement since 2026-11-27 10:05 UTC (2 h 0 m); escalated`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("ticket page lacks %q", want)
		}
	}
	if strings.Contains(body, "<b>mallory") {
		t.Error("an actor's name reached the ticket page as HTML")
	}
}
