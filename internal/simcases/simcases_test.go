package simcases

import (
	"strings"
	"testing"
)

func TestProjectLines(t *testing.T) {
	got := Jira.Project("http://sim", "TOK", "    ")
	want := "platform: jira\n    base_url: http://sim/jira/\n    repo: APP\n    token: {env: TOK}\n    jira: {email: bot@acme.example}"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if id := GitLab.ID(3); id != "acme/sub/app#3" {
		t.Errorf("id %q", id)
	}
	if h := AzureDevOps.Hook("http://d", "s"); h.Dialect != "ado" || !strings.HasSuffix(h.URL, "/webhooks/azuredevops") {
		t.Errorf("hook %+v", h)
	}
}
