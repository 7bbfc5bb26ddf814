package github

import (
	"slices"
	"testing"
)

// The actor is sender.login; a labeled action added only its label, an
// opened one every label the issue has.
func TestParseActor(t *testing.T) {
	ev, err := Webhooks{}.Parse(delivery("issues"), readFixture(t, "issues.labeled.json"))
	if err != nil || ev.Actor != "alice-dev" || !slices.Equal(ev.Added, []string{"agent-smith:pending"}) {
		t.Fatalf("labeled: actor %q added %q err %v", ev.Actor, ev.Added, err)
	}
	ev, err = Webhooks{}.Parse(delivery("issues"), readFixture(t, "issues.edited.json"))
	if err != nil || ev.Actor == "" || len(ev.Added) != 0 {
		t.Fatalf("edited: actor %q added %q err %v", ev.Actor, ev.Added, err)
	}
}
