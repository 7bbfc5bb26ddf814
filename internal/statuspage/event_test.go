package statuspage

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// lifecycle.Event has its own MarshalJSON (durations as _ms); embedded in
// the page's Event it must not swallow the page's id and ticket fields.
func TestEventJSONKeepsIDAndTicket(t *testing.T) {
	in := Event{ID: "1700000000000-0", Ticket: "github:acme/app#1",
		Event: lifecycle.Event{Kind: lifecycle.EventTransition, From: lifecycle.InProgress, To: lifecycle.Done,
			Outcome: "succeeded", Attempt: 1, Run: 1500 * time.Millisecond}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"id":"1700000000000-0"`, `"ticket":"github:acme/app#1"`, `"run_ms":1500`, `"outcome":"succeeded"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON %s lacks %s", b, want)
		}
	}
	var out Event
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.ID != in.ID || out.Ticket != in.Ticket || out.Run != in.Run || out.To != lifecycle.Done {
		t.Errorf("round trip = %+v, want %+v", out, in)
	}
}

// The ticket page and the recent events show a claim that found its ticket
// already queued as an ignored duplicate, not as not_eligible.
func TestPagesWordADuplicateTrigger(t *testing.T) {
	ev := Event{ID: "1-0", Ticket: "github:1", Event: lifecycle.Event{Kind: lifecycle.EventClaim, From: lifecycle.Enqueued,
		Outcome: string(lifecycle.NotEligible), Reason: "state is enqueued", Source: "webhook"}}
	var tb, pb strings.Builder
	if err := pages.ExecuteTemplate(&tb, "ticketpage", ticketView{Events: []Event{ev}}); err != nil {
		t.Fatal(err)
	}
	if err := pages.ExecuteTemplate(&pb, "page", pageView{Status: Status{Recent: []Event{ev}}}); err != nil {
		t.Fatal(err)
	}
	for name, page := range map[string]string{"ticket page": tb.String(), "status page": pb.String()} {
		if !strings.Contains(page, "already enqueued (duplicate trigger ignored)") || !strings.Contains(page, "<td>ignored</td>") {
			t.Errorf("%s does not word the duplicate trigger", name)
		}
		if strings.Contains(page, "not_eligible") || strings.Contains(page, "state is enqueued") {
			t.Errorf("%s shows the duplicate trigger as a refusal", name)
		}
	}
}
