package azuredevops

import (
	"testing"
)

// workitem.updated names resource.revisedBy and the tags System.Tags'
// change added; workitem.created names System.CreatedBy and every tag.
func TestParseActor(t *testing.T) {
	ev, err := Webhooks{}.Parse(nil, fixture(t, "workitem.updated"))
	if err != nil || ev.Actor != "grace@contoso.example" || !ev.AddedLabel("agent-smith") || ev.AddedLabel("frontend") {
		t.Fatalf("updated: actor %q added %q err %v", ev.Actor, ev.Added, err)
	}
	ev, err = Webhooks{}.Parse(nil, fixture(t, "workitem.created"))
	if err != nil || ev.Actor != "ada@contoso.example" || !ev.AddedLabel("agent-smith") {
		t.Fatalf("created: actor %q added %q err %v", ev.Actor, ev.Added, err)
	}
	if got := identityName([]byte(`"Ada Lovelace <ada@contoso.example>"`)); got != "ada@contoso.example" {
		t.Errorf("identity string: %q", got)
	}
}

// System.AuthorizedAs names the actor wherever a payload carries it:
// revisedBy and System.ChangedBy show a ChangedBy a bypass-rules update
// may have forged (fieldAuthorizedAs).
func TestParseActorAuthorizedAs(t *testing.T) {
	const forged, authd = `{"uniqueName":"approver@contoso.example"}`, `{"uniqueName":"bot@contoso.example"}`
	cases := []struct{ name, body, want string }{
		{"updated, changed", `{"eventType":"workitem.updated","resource":{"workItemId":7,"revisedBy":` + forged +
			`,"fields":{"System.Tags":{"newValue":"agent-smith:approved"},"System.AuthorizedAs":{"oldValue":` + forged + `,"newValue":` + authd + `}},` +
			`"revision":{"id":7,"url":"https://dev.azure.com/contoso/_apis/wit/workItems/7","fields":{"System.TeamProject":"shop","System.Tags":"agent-smith:approved","System.ChangedBy":` + forged + `}}}}`, "bot@contoso.example"},
		{"updated, unchanged", `{"eventType":"workitem.updated","resource":{"workItemId":7,"revisedBy":` + forged +
			`,"fields":{"System.Tags":{"newValue":"agent-smith:approved"}},` +
			`"revision":{"id":7,"url":"https://dev.azure.com/contoso/_apis/wit/workItems/7","fields":{"System.TeamProject":"shop","System.Tags":"agent-smith:approved","System.AuthorizedAs":"Bot <bot@contoso.example>"}}}}`, "bot@contoso.example"},
		{"commented", `{"eventType":"workitem.commented","resource":{"id":7,"url":"https://dev.azure.com/contoso/_apis/wit/workItems/7",` +
			`"fields":{"System.TeamProject":"shop","System.History":"/agent-smith approve","System.ChangedBy":` + forged + `,"System.AuthorizedAs":` + authd + `}}}`, "bot@contoso.example"},
		{"commented, no AuthorizedAs", `{"eventType":"workitem.commented","resource":{"id":7,"url":"https://dev.azure.com/contoso/_apis/wit/workItems/7",` +
			`"fields":{"System.TeamProject":"shop","System.History":"/agent-smith approve","System.ChangedBy":` + forged + `}}}`, "approver@contoso.example"},
	}
	for _, c := range cases {
		ev, err := Webhooks{}.Parse(nil, []byte(c.body))
		if err != nil || ev.Actor != c.want {
			t.Errorf("%s: actor %q, %v; want %q", c.name, ev.Actor, err, c.want)
		}
	}
}
