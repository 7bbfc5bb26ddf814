package gitlab

import (
	"testing"
)

// The actor is user.username; an update added the labels in
// changes.labels.current that were not in previous.
func TestParseActor(t *testing.T) {
	ev, err := Webhooks{}.Parse(header(EventIssueHook, ""), fixture(t, "issue.update"))
	if err != nil || ev.Actor != "dreyes" || !ev.AddedLabel("agent-smith") || ev.AddedLabel("bug") {
		t.Fatalf("actor %q added %q err %v", ev.Actor, ev.Added, err)
	}
}
