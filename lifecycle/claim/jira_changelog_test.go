package claim_test

import (
	"net/http/httptest"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/jira"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// Issue 41 #3, the claim's side: a sweep that learns the trigger from a
// Jira Data Center issue's history, whose trigger label alice added in
// the oldest of 150 histories (outside the 100 Get issue embeds), does
// not credit bob, the issue's creator and the one listed in
// trigger.allow: the trigger is unknown, and nobody of that name may
// start runs.
func TestJiraTriggerPastTheEmbeddedChangelogIsNotTheCreator(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	s := trackersim.New(trackersim.Options{Tokens: []string{"tok"}})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	s.SetJiraDeployment(trackersim.JiraDataCenter)
	tr, err := jira.New(jira.Options{BaseURL: srv.URL + "/jira/", Repo: "LOG", Project: "log", Token: "tok",
		Deployment: jira.DeploymentDataCenter, Locker: redislock.Locker{RDB: rdb}})
	if err != nil {
		t.Fatal(err)
	}
	projects := lifecycle.Projects{"log": {Name: "log", Platform: jira.Platform, Tracker: tr, TriggerLabel: "agent-smith",
		TriggerAllow: lifecycle.TriggerAllow{Users: []string{"bob"}},
		Pipeline:     lifecycle.Pipeline{Command: []string{"true"}, MaxAttempts: 1}}}
	labels := lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}
	claims := claim.NewService(rdb, lifecycletest.QueueOn(rdb), projects, claim.Config{Instance: "test", Labels: labels, Logger: zaptest.NewLogger(t)})

	n := s.As("bob").CreateIssue("LOG", "long-lived", "")
	if err := s.As("alice").AddLabels("LOG", n, "agent-smith"); err != nil {
		t.Fatal(err)
	}
	carol := s.As("carol")
	for i := range 149 {
		err := carol.AddLabels("LOG", n, "noise")
		if i%2 == 1 {
			err = carol.RemoveLabel("LOG", n, "noise")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	ref := platforms.Ref{Platform: jira.Platform, Project: "log", ID: jira.FormatID("LOG", n)}
	res, err := claims.Claim(t.Context(), ref, lifecycle.SourceSweep, 1)
	if err != nil || res.Outcome != lifecycle.NotEligible || res.Reason != claim.NotAllowedReason("someone its history does not name") {
		t.Errorf("sweep claim = %+v, %v; want not eligible, the trigger unnamed", res, err)
	}
}
