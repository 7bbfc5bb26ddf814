package jira_test

import (
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/jira"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// longLived makes issue n of project: created by bob without labels,
// alice adding the trigger label in its oldest history, then carol
// toggling another label 149 times: 150 histories, the add outside the
// latest 100 that Get issue embeds.
func longLived(t *testing.T, s *trackersim.Sim, project string) int {
	t.Helper()
	n := s.As("bob").CreateIssue(project, "long-lived", "")
	if err := s.As("alice").AddLabels(project, n, "agent-smith"); err != nil {
		t.Fatal(err)
	}
	carol := s.As("carol")
	for i := range 149 {
		err := carol.AddLabels(project, n, "noise")
		if i%2 == 1 {
			err = carol.RemoveLabel(project, n, "noise")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// Who added the trigger label on an issue with more histories than Get
// issue embeds: Cloud pages Get changelogs and finds alice, not bob who
// created it; Data Center, which cannot page, does not know ("") rather
// than guess the creator. An add among the latest histories, and a label
// given at creation under a whole changelog, are found on both.
func TestLabelAddedByPastTheEmbeddedChangelog(t *testing.T) {
	for _, c := range []struct {
		deployment, email, dialect string
	}{{jira.DeploymentCloud, "bot@example.com", trackersim.JiraCloud}, {jira.DeploymentDataCenter, "", trackersim.JiraDataCenter}} {
		t.Run(c.deployment, func(t *testing.T) {
			s, url := newSim(t)
			s.SetJiraDeployment(c.dialect)
			tr, err := jira.New(jira.Options{BaseURL: url + "/jira/", Repo: "LOG", Token: simToken, Email: c.email,
				Deployment: c.deployment, Locker: noWrites{}})
			if err != nil {
				t.Fatal(err)
			}
			name := func(login string) string {
				if c.dialect == trackersim.JiraCloud {
					return trackersim.ActorName("jira", login)
				}
				return login
			}
			ref := func(n int) platforms.Ref { return platforms.Ref{Platform: jira.Platform, ID: jira.FormatID("LOG", n)} }

			n := longLived(t, s, "LOG")
			want := name("alice")
			if c.dialect != trackersim.JiraCloud {
				want = "" // unknown: the add is not among the 100 embedded
			}
			if who, err := tr.LabelAddedBy(t.Context(), ref(n), "agent-smith"); err != nil || who != want {
				t.Errorf("trigger label added by %q, %v; want %q (bob, %q, only created the issue)", who, err, want, name("bob"))
			}
			// carol's last add of "noise" is among the latest.
			if who, err := tr.LabelAddedBy(t.Context(), ref(n), "noise"); err != nil || who != name("carol") {
				t.Errorf("noise added by %q, %v; want carol", who, err)
			}
			// A label given at creation, the changelog whole: the creator.
			m := s.As("bob").CreateIssue("LOG", "short", "", "agent-smith")
			if who, err := tr.LabelAddedBy(t.Context(), ref(m), "agent-smith"); err != nil || who != name("bob") {
				t.Errorf("label given at creation added by %q, %v; want bob", who, err)
			}
		})
	}
}
