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
