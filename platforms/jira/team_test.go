package jira_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/platforms/jira"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// InTeam reads a user's groups where each deployment serves them: Cloud's
// user/groups?accountId=, Data Center's user?username=&expand=groups
// (user/groups is Cloud's only; the sim answers 404 for it on Data Center).
func TestInTeamOnBothDeployments(t *testing.T) {
	for _, c := range []struct {
		deployment, email, dialect string
	}{{jira.DeploymentCloud, "bot@example.com", "cloud"}, {jira.DeploymentDataCenter, "", "datacenter"}} {
		t.Run(c.deployment, func(t *testing.T) {
			s, url := newSim(t)
			s.CreateRepo("TEAMS")
			s.SetUserRole("alice", "read")
			s.SetUserRole("bob", "read")
			s.SetTeamMembers("jira-reviewers", "alice")
			if c.dialect == "datacenter" {
				s.SetJiraDeployment("datacenter")
			}
			tr, err := jira.New(jira.Options{BaseURL: url + "/jira/", Repo: "TEAMS", Project: "teams", Token: simToken,
				Email: c.email, Deployment: c.deployment, Locker: noWrites{}})
			if err != nil {
				t.Fatal(err)
			}
			actor := func(login string) string {
				if c.dialect == "cloud" {
					return trackersim.ActorName("jira", login)
				}
				return login
			}
			if in, err := tr.InTeam(t.Context(), actor("alice"), "Jira-Reviewers"); err != nil || !in {
				t.Errorf("alice in jira-reviewers = %v, %v; want true", in, err)
			}
			if in, err := tr.InTeam(t.Context(), actor("bob"), "jira-reviewers"); err != nil || in {
				t.Errorf("bob in jira-reviewers = %v, %v; want false", in, err)
			}
		})
	}
}

// noWrites is a Locker for tests that write no labels.
type noWrites struct{}

func (noWrites) TryLock(context.Context, string, time.Duration) (func(), bool, error) {
	return nil, false, errors.New("this test writes no labels")
}
