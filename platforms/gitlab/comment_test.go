package gitlab

import (
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// A Note Hook on an issue is EventComment; system notes, edits and notes on
// merge requests are ignored.
func TestParseNote(t *testing.T) {
	ev, err := Webhooks{}.Parse(header(EventNoteHook, ""), fixture(t, "note.create"))
	if err != nil || ev.Kind != platforms.EventComment || ev.Actor == "" || ev.Ticket == nil || ev.Locator == "" || ev.Comment == "" {
		t.Fatalf("note.create: %+v, %v", ev, err)
	}
	note := func(attrs string) []byte {
		return []byte(`{"object_kind":"note","user":{"username":"dana"},"project":{"path_with_namespace":"acme/app"},` +
			`"object_attributes":{` + attrs + `},"issue":{"iid":3,"state":"opened"}}`)
	}
	ev, err = Webhooks{}.Parse(header(EventNoteHook, ""), note(`"note":"/agent-smith cancel\nnow","noteable_type":"Issue","system":false`))
	if err != nil || ev.Kind != platforms.EventComment || ev.Comment != "/agent-smith cancel" || ev.Actor != "dana" || ev.Ticket.Ref.ID != "acme/app#3" {
		t.Fatalf("note: %+v, %v", ev, err)
	}
	for name, attrs := range map[string]string{
		"system":        `"note":"/agent-smith retry","noteable_type":"Issue","system":true`,
		"edit":          `"note":"/agent-smith retry","noteable_type":"Issue","action":"update"`,
		"merge request": `"note":"/agent-smith retry","noteable_type":"MergeRequest"`,
	} {
		if ev, err := (Webhooks{}).Parse(header(EventNoteHook, ""), note(attrs)); err != nil || ev.Kind != platforms.EventIgnored {
			t.Errorf("%s: %+v, %v; want ignored", name, ev, err)
		}
	}
}
