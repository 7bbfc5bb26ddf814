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
