package trackersim_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/agentsmithd/agentsmithd/trackersim"
)

// getAs GETs url with token and decodes the 200 answer into out.
func getAs(t *testing.T, url, token string, out any) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("PRIVATE-TOKEN", token)
	resp, err := hookClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// Each hook list names the hook's events as its service does, comment
// events among them: GitHub's "events" array ("issue_comment"), GitLab's
// "note_events" boolean, one Azure DevOps subscription per "eventType"
// ("workitem.commented"), Jira's "events" ("comment_created"). A hook
// created without Events lists those docs/configuration.md asks for; one
// with Events lists those only, and GitLab says false for the rest.
func TestHookListsNameCommentEvents(t *testing.T) {
	t.Parallel()
	s, base := simWithHooks(t, nil)
	const sink = "https://receiver.invalid/webhooks/"
	s.AddHook(trackersim.Hook{Repo: "acme/app", URL: sink + "github"})
	s.AddHook(trackersim.Hook{Repo: "acme/bare", URL: sink + "github", Events: []string{"issues"}})
	s.AddHook(trackersim.Hook{Repo: "grp/app", URL: sink + "gitlab", Dialect: "gitlab"})
	s.AddHook(trackersim.Hook{Repo: "grp/bare", URL: sink + "gitlab", Dialect: "gitlab", Events: []string{"issues_events"}})
	s.AddHook(trackersim.Hook{Repo: "org/proj", URL: sink + "azuredevops", Dialect: "ado"})
	s.AddHook(trackersim.Hook{Repo: "PROJ", URL: sink + "jira", Dialect: "jira"})

	var gh []struct{ Events []string }
	getAs(t, base+"/github/repos/acme/app/hooks", "admin-token", &gh)
	if len(gh) != 1 || !slices.Equal(gh[0].Events, []string{"issues", "issue_comment"}) {
		t.Errorf("GitHub default hook: %+v, want events issues, issue_comment", gh)
	}
	getAs(t, base+"/github/repos/acme/bare/hooks", "admin-token", &gh)
	if len(gh) != 1 || !slices.Equal(gh[0].Events, []string{"issues"}) {
		t.Errorf("GitHub issues-only hook: %+v", gh)
	}

	var gl []map[string]any
	getAs(t, base+"/gitlab/api/v4/projects/grp%2Fapp/hooks", "admin-token", &gl)
	if len(gl) != 1 || gl[0]["issues_events"] != true || gl[0]["note_events"] != true || gl[0]["confidential_note_events"] != false {
		t.Errorf("GitLab default hook: %+v, want issues_events and note_events true", gl)
	}
	getAs(t, base+"/gitlab/api/v4/projects/grp%2Fbare/hooks", "admin-token", &gl)
	if len(gl) != 1 || gl[0]["issues_events"] != true || gl[0]["note_events"] != false {
		t.Errorf("GitLab issues-only hook: %+v, want note_events false (present)", gl)
	}

	var ado struct {
		Value []struct{ EventType string }
	}
	getAs(t, base+"/ado/org/_apis/hooks/subscriptions?api-version=7.1", "admin-token", &ado)
	var types []string
	for _, v := range ado.Value {
		types = append(types, v.EventType)
	}
	if !slices.Equal(types, []string{"workitem.created", "workitem.updated", "workitem.commented"}) {
		t.Errorf("Azure DevOps subscriptions' event types %v, want created, updated, commented", types)
	}

	var jira []struct{ Events []string }
	getAs(t, base+"/jira/rest/webhooks/1.0/webhook", "admin-token", &jira)
	if len(jira) != 1 || !slices.Contains(jira[0].Events, "comment_created") {
		t.Errorf("Jira default webhook: %+v, want comment_created among its events", jira)
	}
}
