package statuspage

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/gate"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// linkOnly is a tracker the page may ask for links only: any other call
// (a read per page view) panics through the nil Tracker.
type linkOnly struct{ platforms.Tracker }

func (linkOnly) WebURL(ref platforms.Ref) (string, error) {
	return "https://github.com/" + strings.Replace(ref.ID, "#", "/issues/", 1), nil
}

// noDecider offers the buttons; the page test presses none.
type noDecider struct{}

func (noDecider) DecideAsOperator(context.Context, platforms.Ref, string, gate.Decision) (claim.CommandResult, error) {
	return claim.CommandResult{}, nil
}

func (noDecider) CancelAsOperator(context.Context, platforms.Ref, string, string) (claim.CommandResult, error) {
	return claim.CommandResult{}, nil
}

// The page lists the tickets awaiting approval from the parked index, with
// no tracker call: ticket linked to the tracker, title as text, project,
// the stage awaited, since when and for how long, the gate's deadline and
// whether it escalated, and the approve, reject and cancel buttons. A ticket
// unparked (what a decision does) is no longer listed.
func TestPageListsTicketsAwaitingApproval(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	ctx := t.Context()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	gated := func(timeout time.Duration) *lifecycle.Gate {
		return &lifecycle.Gate{Approval: &lifecycle.Approval{MaxRejections: 2, Timeout: timeout, OnTimeout: lifecycle.OnTimeoutEscalate}}
	}
	projects := lifecycle.Projects{"app": {Name: "app", Platform: "github", Tracker: linkOnly{},
		Stages: []lifecycle.Stage{{Name: "plan"}, {Name: "implement", Gate: gated(4 * time.Hour)}, {Name: "ship", Gate: gated(0)}}}}
	hostile := `<img src=x onerror=alert(1)>`
	parked := []lifecycle.ParkedEntry{
		{Ref: refFor("acme/app#1"), Stage: "implement", Title: hostile, Since: now.Add(-90 * time.Minute)},
		{Ref: refFor(`acme/app#2"><script>alert(2)</script>`), Stage: "ship", Title: "ship it", Since: now.Add(-30 * time.Minute)},
	}
	for _, e := range parked {
		if err := lifecycle.Park(ctx, rdb, e); err != nil {
			t.Fatal(err)
		}
	}
	h := New(Config{RDB: rdb, Queue: testQueue(rdb), Projects: projects, Gate: noDecider{}, Instance: "replica-a", Token: "s3cret",
		Clock: func() time.Time { return now }})
	body := get(t, h, "/status", "Bearer s3cret").Body.String()
	for _, want := range []string{`<table id="awaiting">`, "Awaiting approval <span class=\"meta\">(2)",
		`<a href="https://github.com/acme/app/issues/1"`, "&lt;img src=x onerror=alert(1)&gt;", ">implement<",
		"2026-11-27 10:30", ">1 h 30 m<", "2026-11-27 14:30, then escalate",
		`data-action="approve" data-target="github:acme/app#1"`, `data-action="reject" data-target="github:acme/app#1"`,
		`data-action="cancel" data-target="github:acme/app#1"`,
		">ship<", ">none<", "&lt;script&gt;alert(2)&lt;/script&gt;"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{hostile, "<script>alert(2)"} {
		if strings.Contains(body, bad) {
			t.Errorf("page carries %q as HTML", bad)
		}
	}
	var st Status
	if err := json.Unmarshal(get(t, h, "/status.json", "Bearer s3cret").Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if st.AwaitingTotal != 2 || len(st.Awaiting) != 2 || st.Awaiting[0].Ref != parked[0].Ref || st.Awaiting[0].Title != hostile {
		t.Errorf("status.json awaiting = %+v (%d)", st.Awaiting, st.AwaitingTotal)
	}

	if err := lifecycle.Unpark(ctx, rdb, parked[0].Ref); err != nil {
		t.Fatal(err)
	}
	body = get(t, h, "/status", "Bearer s3cret").Body.String()
	if strings.Contains(body, `data-target="github:acme/app#1"`) || strings.Contains(body, "https://github.com/acme/app/issues/1\"") {
		t.Error("an unparked ticket is still listed")
	}
	if !strings.Contains(body, "Awaiting approval <span class=\"meta\">(1)") {
		t.Error("the page does not count one ticket awaiting approval")
	}
}
