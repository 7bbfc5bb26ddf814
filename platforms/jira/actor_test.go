package jira

import (
	"testing"
)

// The actor is user.accountId on Cloud; an update added the labels its
// changelog's labels item gained.
func TestParseActor(t *testing.T) {
	ev, err := Webhooks{}.Parse(delivery(), readFixture(t, "issue_updated.labeled.json"))
	if err != nil || ev.Actor != "5b10ac8d82e05b22cc7d4ef5" || !ev.AddedLabel("agent-smith") || ev.AddedLabel("docker") {
		t.Fatalf("actor %q added %q err %v", ev.Actor, ev.Added, err)
	}
}
