package jira_test

import (
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/jira"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

const checkReceiver = "https://agentsmith.example.com"

// check's webhook row reads the admin webhooks where each flavour serves
// them (Data Center 10 moved them to /rest/jira-webhook/1.0/webhooks and
// answers the old path 404): it finds the hook that sends here, and fails
// one that points elsewhere or lacks an event, naming the fix.
func TestCheckWebhookRowPerFlavour(t *testing.T) {
	for _, c := range []struct{ flavour, deployment, email, listCall string }{
		{trackersim.JiraCloud, jira.DeploymentCloud, "bot@example.com", "GET /jira/rest/webhooks/1.0/webhook"},
		{trackersim.JiraDataCenter, jira.DeploymentDataCenter, "", "GET /jira/rest/webhooks/1.0/webhook"},
		{trackersim.JiraDataCenter10, jira.DeploymentDataCenter, "", "GET /jira/rest/jira-webhook/1.0/webhooks"},
	} {
		for _, h := range []struct {
			name   string
			hook   trackersim.Hook
			status platforms.CheckStatus
			detail string
		}{
			{"registered", trackersim.Hook{URL: checkReceiver + "/webhooks/jira"}, platforms.CheckOK, checkReceiver + "/webhooks/jira"},
			{"wrong url", trackersim.Hook{URL: "https://elsewhere.example.com/webhooks/jira"}, platforms.CheckFail, "no hook of 1 points at"},
			{"wrong events", trackersim.Hook{URL: checkReceiver + "/webhooks/jira", Events: []string{"jira:issue_deleted"}},
				platforms.CheckFail, "lacks jira:issue_created, jira:issue_updated"},
		} {
			t.Run(c.flavour+"/"+h.name, func(t *testing.T) {
				s, url := newSim(t)
				s.SetJiraDeployment(c.flavour)
				s.SetAccess(simToken, trackersim.Access{Role: trackersim.RoleAdmin})
				s.CreateRepo("HOOK")
				h.hook.Dialect, h.hook.Repo = "jira", "HOOK"
				s.AddHook(h.hook)
				tr, err := jira.New(jira.Options{BaseURL: url + "/jira/", Repo: "HOOK", Token: simToken, Email: c.email,
					Deployment: c.deployment, Locker: noWrites{}})
				if err != nil {
					t.Fatal(err)
				}
				before := s.Stats().Calls[c.listCall]
				var row *platforms.CheckResult
				results := tr.Check(t.Context(), platforms.CheckOptions{TriggerLabel: "agent-smith", Webhooks: true, ReceiverURL: checkReceiver})
				for i := range results {
					if results[i].Name == "webhook" {
						row = &results[i]
					}
				}
				if row == nil {
					t.Fatalf("no webhook row in %+v", results)
				}
				if row.Status != h.status || !strings.Contains(row.Detail, h.detail) {
					t.Errorf("webhook row %+v, want %s with %q", *row, h.status, h.detail)
				}
				if h.status == platforms.CheckFail && row.Fix == "" {
					t.Errorf("a failed webhook row names no fix: %+v", *row)
				}
				if n := s.Stats().Calls[c.listCall] - before; n != 1 {
					t.Errorf("%d calls of %s, want 1", n, c.listCall)
				}
			})
		}
	}
}
