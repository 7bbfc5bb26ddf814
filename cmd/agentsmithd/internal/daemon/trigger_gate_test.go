package daemon_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// outsider is a user with no role on the sim's projects.
const outsider = "mallory"

// gateComments counts the refusal comments on issue n naming actor.
func (e *env) gateComments(n int, actor string) int {
	is, _ := e.sim.Issue(e.repo, n)
	c := 0
	for _, cm := range is.Comments {
		if strings.Contains(cm.Body, "triggered by "+actor+", who may not start runs") {
			c++
		}
	}
	return c
}

// countAudit counts the audit events of issue n that ok accepts.
func (e *env) countAudit(n int, ok func(lifecycle.Event) bool) int {
	e.t.Helper()
	hist, err := audit.NewReader(e.redis.Client(e.t)).History(context.Background(), refOf(e, n), time.Time{}, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	c := 0
	for _, h := range hist {
		if ok(h.Event) {
			c++
		}
	}
	return c
}

// waitAudit waits for count audit events of issue n that ok accepts.
func (e *env) waitAudit(n, count int, what string, ok func(lifecycle.Event) bool) {
	e.t.Helper()
	eventually.Wait(e.t, 20*time.Second, what, func() bool { return e.countAudit(n, ok) >= count })
}

// An outsider who opens an issue with the trigger label starts nothing: the
// claim is not_eligible, they are told once (however often they re-label),
// the TriggerSweeper finding the label refuses too, and the label stays, so
// a collaborator re-adding it starts the run.
func TestTriggerByOutsiderIsRefused(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		e.startDaemon(e.config("replica-a", ""))
		who := e.pc.Actor(outsider)
		n := e.sim.As(outsider).CreateIssue(e.repo, "run my code", "", "agent-smith")
		eventually.Wait(t, 20*time.Second, "the refusal comment", func() bool { return e.gateComments(n, who) == 1 })
		reason := claim.NotAllowedReason(who)
		e.waitAudit(n, 1, "the sweeper's refusal", func(ev lifecycle.Event) bool {
			return ev.Source == lifecycle.SourceSweep && ev.Outcome == string(lifecycle.NotEligible) && ev.Reason == reason
		})
		// Re-labelled by the outsider: refused again, not commented again.
		fromWebhook := func(ev lifecycle.Event) bool {
			return ev.Kind == lifecycle.EventClaim && ev.Source == lifecycle.SourceWebhook
		}
		before := e.countAudit(n, fromWebhook)
		if err := e.sim.As(outsider).RemoveLabel(e.repo, n, "agent-smith"); err != nil {
			t.Fatal(err)
		}
		if err := e.sim.As(outsider).AddLabels(e.repo, n, "agent-smith"); err != nil {
			t.Fatal(err)
		}
		// The re-label's delivery is refused, or finds a sweep's claim
		// lock (which refuses it too).
		e.waitAudit(n, before+1, "the re-label's webhook claim", fromWebhook)
		if got := e.gateComments(n, who); got != 1 {
			t.Errorf("%d refusal comments, want 1", got)
		}
		if s := e.state(n); s != lifecycle.Pending || len(e.starts(n)) != 0 {
			t.Fatalf("state %s, %d starts: an outsider's trigger ran", s, len(e.starts(n)))
		}
		is, _ := e.sim.Issue(e.repo, n)
		if !hasLabelFold(is.Labels, "agent-smith") {
			t.Fatalf("the trigger label was removed: %q", is.Labels)
		}
		// A collaborator re-adds it: the run starts.
		if err := e.sim.RemoveLabel(e.repo, n, "agent-smith"); err != nil {
			t.Fatal(err)
		}
		if err := e.sim.AddLabels(e.repo, n, "agent-smith"); err != nil {
			t.Fatal(err)
		}
		e.waitState(n, 20*time.Second, lifecycle.Done)
		if got := len(e.starts(n)); got != 1 {
			t.Errorf("%d runs, want 1", got)
		}
	})
}

// A user listed in trigger.allow.users runs without write access; with
// access: none a collaborator who is not listed does not.
func TestTriggerAllowUsers(t *testing.T) {
	e := newEnv(t)
	e.projectExtra = fmt.Sprintf("    trigger: {allow: {access: none, users: [%s]}}\n", "Friend")
	e.startDaemon(e.config("replica-a", ""))
	e.sim.SetUserRole("friend", trackersim.RoleRead)
	n := e.sim.As("friend").CreateIssue(e.repo, "listed", "", "agent-smith")
	e.waitState(n, 20*time.Second, lifecycle.Done)
	m := e.sim.CreateIssue(e.repo, "collaborator, not listed", "", "agent-smith")
	eventually.Wait(t, 20*time.Second, "the refusal comment", func() bool { return e.gateComments(m, trackersim.HumanLogin) == 1 })
	if len(e.starts(m)) != 0 {
		t.Error("an unlisted collaborator's trigger ran with access: none")
	}
}

func hasLabelFold(ls []string, want string) bool {
	for _, l := range ls {
		if strings.EqualFold(l, want) {
			return true
		}
	}
	return false
}

// With polling and no webhooks, the person is learned from the ticket's
// history: an outsider's trigger is refused (once), a collaborator's
// re-trigger of the same ticket runs.
func TestTriggerGateByPolling(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		e.projectExtra = "    polling: {enabled: true, interval: 1s}\n"
		cfg := e.config("replica-a", "")
		cfg.Roles = []string{config.RolePoller, config.RoleConsumer, config.RoleHousekeeping}
		e.startDaemon(cfg)
		who := e.pc.Actor(outsider)
		n := e.sim.As(outsider).CreateIssue(e.repo, "run my code", "", "agent-smith")
		e.waitAudit(n, 2, "two poll refusals", func(ev lifecycle.Event) bool {
			return ev.Source == lifecycle.SourcePoll && ev.Reason == claim.NotAllowedReason(who)
		})
		if got := e.gateComments(n, who); got != 1 || len(e.starts(n)) != 0 {
			t.Fatalf("%d refusal comments (want 1), %d runs (want 0)", got, len(e.starts(n)))
		}
		if err := e.sim.RemoveLabel(e.repo, n, "agent-smith"); err != nil {
			t.Fatal(err)
		}
		if err := e.sim.AddLabels(e.repo, n, "agent-smith"); err != nil {
			t.Fatal(err)
		}
		// The outsider's name is remembered for keys.TriggerActorTTL:
		// forget it as its expiry would.
		if err := e.redis.Client(t).Del(context.Background(), keys.TriggerActor(refOf(e, n).Key())).Err(); err != nil {
			t.Fatal(err)
		}
		e.waitState(n, 20*time.Second, lifecycle.Done)
	})
}

// teamOf is how each platform's trigger.allow.teams names the sim team
// "reviewers" of the test repository's owner, and how the sim names it.
var teamOf = map[string]struct{ config, sim string }{
	"github":      {"reviewers", "acme/reviewers"}, // a slug in the repository's organization
	"gitlab":      {"acme/reviewers", "acme/reviewers"},
	"azuredevops": {"Reviewers", "Reviewers"},
	"jira":        {"jira-reviewers", "jira-reviewers"},
}

// A member of a team (group) in trigger.allow.teams runs without write
// access or being listed; an outsider in no team is still refused.
func TestTriggerAllowTeams(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		team := teamOf[e.pc.Name]
		e.projectExtra = fmt.Sprintf("    trigger: {allow: {teams: [%q]}}\n", team.config)
		e.sim.SetTeamMembers(team.sim, "friend")
		e.startDaemon(e.config("replica-a", ""))
		n := e.sim.As("friend").CreateIssue(e.repo, "team member", "", "agent-smith")
		e.waitState(n, 20*time.Second, lifecycle.Done)
		who := e.pc.Actor(outsider)
		m := e.sim.As(outsider).CreateIssue(e.repo, "outsider", "", "agent-smith")
		eventually.Wait(t, 20*time.Second, "the refusal comment", func() bool { return e.gateComments(m, who) == 1 })
		if len(e.starts(m)) != 0 {
			t.Error("an outsider's trigger ran")
		}
		if len(e.starts(n)) != 1 {
			t.Errorf("team member: %d runs, want 1", len(e.starts(n)))
		}
	})
}
