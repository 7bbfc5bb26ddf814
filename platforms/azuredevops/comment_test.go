package azuredevops

import (
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// workitem.commented is EventComment: the first line of System.History's
// HTML as text, the author from System.ChangedBy.
func TestParseCommented(t *testing.T) {
	ev, err := Webhooks{}.Parse(nil, fixture(t, "workitem.commented"))
	if err != nil || ev.Kind != platforms.EventComment || ev.Comment != "Seen it again on main." || ev.Ticket == nil || ev.Locator == "" {
		t.Fatalf("fixture: %+v, %v", ev, err)
	}
	b := strings.Replace(string(fixture(t, "workitem.commented")), `"System.History": "Seen it again on main."`,
		`"System.History": "<div>/agent-smith&nbsp;retry</div><div>thanks &amp; bye</div>", "System.ChangedBy": "Grace Hopper <grace@contoso.com>"`, 1)
	ev, err = Webhooks{}.Parse(nil, []byte(b))
	if err != nil || ev.Kind != platforms.EventComment || ev.Comment != "/agent-smith retry" || ev.Actor != "grace@contoso.com" {
		t.Fatalf("html comment: %+v, %v", ev, err)
	}
}
