package gate_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/gate"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/jira"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// Issue 41 #3: on a Jira issue with more histories than Get issue embeds
// (100), the trigger label's add (alice's, the oldest) is not among them.
// On Data Center, which cannot page, who triggered the run is then
// unknown, not the issue's creator (bob): under distinct_from_trigger
// every approval is refused with that reason, the creator's and, above
// all, alice's own, which a guess of bob let through. On Cloud the paged
// changelog names alice: hers is refused, bob's carried out.
func TestJiraTriggerPastTheEmbeddedChangelog(t *testing.T) {
	t.Run("datacenter", func(t *testing.T) {
		g, s, labels, ref := jiraLongLived(t, trackersim.JiraDataCenter)
		for _, who := range []string{"bob", "alice"} {
			res, err := g.Decide(t.Context(), ref, who, gate.Decision{Kind: gate.Approve})
			if err != nil || res.Outcome != claim.CommandRefused || res.Reason != "who triggered the run is not known" {
				t.Errorf("approval by %s: %+v %v; want refused, the trigger not known", who, res, err)
			}
		}
		is, _ := s.Issue("LOG", 1)
		if st := labels.StateOf(is.Labels); st != lifecycle.AwaitingApproval {
			t.Errorf("state %s, want still awaiting-approval", st)
		}
		replied := false
		for _, c := range is.Comments {
			replied = replied || strings.Contains(c.Body, "who triggered this run is not known")
		}
		if !replied {
			t.Errorf("comments %+v: want the reply that the trigger is not known", is.Comments)
		}
	})
	t.Run("cloud", func(t *testing.T) {
		g, _, _, ref := jiraLongLived(t, trackersim.JiraCloud)
		alice, bob := trackersim.ActorName("jira", "alice"), trackersim.ActorName("jira", "bob")
		if res, err := g.Decide(t.Context(), ref, alice, gate.Decision{Kind: gate.Approve}); err != nil || res.Outcome != claim.CommandRefused ||
			!strings.HasSuffix(res.Reason, "triggered the run") {
			t.Errorf("approval by alice, the trigger: %+v %v; want refused", res, err)
		}
		if res, err := g.Decide(t.Context(), ref, bob, gate.Decision{Kind: gate.Approve}); err != nil || res.Outcome != gate.OutcomeApproved {
			t.Errorf("approval by bob: %+v %v; want approved", res, err)
		}
	})
}

// jiraLongLived starts a Jira tracker of deployment on a sim whose issue
// LOG-1, created by bob, awaits approval of stage implement (approvers
// alice and bob, distinct_from_trigger), alice having added the trigger
// label in its oldest of 150 histories.
func jiraLongLived(t *testing.T, deployment string) (*gate.Gate, *trackersim.Sim, lifecycle.Labels, platforms.Ref) {
	t.Helper()
	rdb := redistest.Start(t).Client(t)
	s := trackersim.New(trackersim.Options{Tokens: []string{"tok"}})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	s.SetJiraDeployment(deployment)
	opts := jira.Options{BaseURL: srv.URL + "/jira/", Repo: "LOG", Project: "log", Token: "tok",
		Deployment: jira.DeploymentDataCenter, Locker: redislock.Locker{RDB: rdb}}
	approvers := []string{"alice", "bob"}
	if deployment == trackersim.JiraCloud {
		opts.Deployment, opts.Email = jira.DeploymentCloud, "bot@example.com"
		approvers = []string{trackersim.ActorName("jira", "alice"), trackersim.ActorName("jira", "bob")}
	}
	tr, err := jira.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	projects := lifecycle.Projects{"log": {Name: "log", Platform: jira.Platform, Tracker: tr, TriggerLabel: "agent-smith",
		Pipeline: lifecycle.Pipeline{Command: []string{"true"}, MaxAttempts: 1},
		Stages: []lifecycle.Stage{{Name: "plan"}, {Name: "implement", Gate: &lifecycle.Gate{Approval: &lifecycle.Approval{
			Approvers: lifecycle.TriggerAllow{Users: approvers}, MaxRejections: 1, DistinctFromTrigger: true}}}}}}
	labels := lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}
	q := lifecycletest.QueueOn(rdb)
	claims := claim.NewService(rdb, q, projects, claim.Config{Instance: "test", Labels: labels, Logger: zaptest.NewLogger(t)})
	g := gate.New(rdb, claims, q, gate.Config{Instance: "test"})

	sl := projects["log"].Labels(labels)
	n := s.As("bob").CreateIssue("LOG", "long-lived", "", sl.Label(lifecycle.AwaitingApproval), sl.Stage("implement"))
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
	if n != 1 {
		t.Fatalf("issue %d, want LOG-1", n)
	}
	return g, s, labels, platforms.Ref{Platform: jira.Platform, Project: "log", ID: jira.FormatID("LOG", n)}
}
