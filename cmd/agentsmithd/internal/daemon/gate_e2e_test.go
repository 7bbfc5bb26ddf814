package daemon_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// gatedScript logs "gated <id> <stage> review=<review>" and writes the
// stage's result.
const gatedScript = `echo "gated $AGENTSMITH_TICKET_ID $AGENTSMITH_STAGE review=$AGENTSMITH_REVIEW" >> "$RUN_LOG"
printf '{"summary": "%s finished"}' "$AGENTSMITH_STAGE" > "$AGENTSMITH_RESULT_FILE"`

// startGated starts a replica whose project has plan → implement → test,
// implement with gate (a YAML value: approval or {approval: {…}}).
func (e *env) startGated(instance, gate string, roles ...string) {
	e.t.Helper()
	e.startGatedYAML(e.gatedYAML(instance, gate), roles...)
}

// gatedYAML is startGated's config.
func (e *env) gatedYAML(instance, gate string) string {
	e.t.Helper()
	script := filepath.Join(e.dir, "gated.sh")
	if err := os.WriteFile(script, []byte(gatedScript), 0o755); err != nil {
		e.t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("      stages:\n")
	for _, s := range threeStages {
		g := ""
		if s == "implement" {
			g = ", gate: " + gate
		}
		fmt.Fprintf(&b, "        - {name: %s, command: [sh, %q]%s}\n", s, script, g)
	}
	return e.withPipeline(instance, b.String())
}

// startGatedYAML starts a replica of yml with roles, when given.
func (e *env) startGatedYAML(yml string, roles ...string) {
	e.t.Helper()
	cfg, err := config.Parse([]byte(yml), lookupEnv)
	if err != nil {
		e.t.Fatalf("config: %v", err)
	}
	if len(roles) > 0 {
		cfg.Roles = roles
	}
	e.startDaemon(cfg)
}

// A ticket parks in awaiting-approval after plan with no run and no
// heartbeat; an outsider's approval is refused; a rejection with text
// runs plan again with $AGENTSMITH_REVIEW; an approval runs implement and
// test to Done.
func TestApprovalGateParksRejectsAndApproves(t *testing.T) {
	forEachPlatformAndGitHubREST(t, func(t *testing.T, e *env) {
		e.startGated("replica-a", "approval")
		n := e.sim.CreateIssue(e.repo, "Gate me", "", "agent-smith")
		e.waitState(n, 60*time.Second, lifecycle.AwaitingApproval)
		staged := labels.WithStages(threeStages)
		is, _ := e.sim.Issue(e.repo, n)
		if s := staged.StageOf(is.Labels); s != "implement" {
			t.Errorf("parked at stage %q, want implement (the stage that waits)", s)
		}
		if e.commentsWith(n, "stage implement awaits approval") != 1 {
			t.Errorf("no review request comment")
		}

		who := e.pc.Actor(outsider)
		if err := e.sim.As(outsider).AddComment(e.repo, n, "/agent-smith approve"); err != nil {
			t.Fatal(err)
		}
		eventually.Wait(t, 20*time.Second, "the refusal reply", func() bool {
			return e.commentsWith(n, "may not approve") == 1
		})
		if s := e.state(n); s != lifecycle.AwaitingApproval {
			t.Fatalf("after %s's approval: state %s, want still awaiting-approval", who, s)
		}

		if err := e.sim.AddComment(e.repo, n, "/agent-smith reject add a rollback step"); err != nil {
			t.Fatal(err)
		}
		eventually.Wait(t, 60*time.Second, "plan to run again", func() bool { return len(e.runLines("gated", n)) == 2 })
		e.waitState(n, 60*time.Second, lifecycle.AwaitingApproval)
		if err := e.sim.AddComment(e.repo, n, "/agent-smith approve"); err != nil {
			t.Fatal(err)
		}
		e.waitState(n, 60*time.Second, lifecycle.Done)
		want := []string{"plan review=", "plan review=add a rollback step", "implement review=", "test review="}
		if got := e.runLines("gated", n); !slices.Equal(got, want) {
			t.Errorf("stage runs %q, want %q", got, want)
		}
		if got := e.commentsWith(n, "approved by "+e.pc.Actor(trackersim.HumanLogin)); got != 1 {
			t.Errorf("%d approval replies naming the approver, want 1", got)
		}
	})
}

// A gate past its timeout (on_timeout escalate, the default) is escalated
// by the housekeeping GateKeeper on the replicas' clock, which the test
// holds: nothing while the clock stands before the deadline; once it is
// past, the escalation label and one comment mentioning the gate's
// handle, the ticket still parked with no stage run; an approval then
// runs it to Done.
func TestApprovalGateDeadlineEscalates(t *testing.T) {
	forEachPlatformAndGitHubREST(t, func(t *testing.T, e *env) {
		clock := &fakeClock{now: time.Now()}
		e.now = clock.Now
		// The GateKeeper runs every slow_interval.
		yml := e.gatedYAML("replica-a", `{approval: {timeout: 1h, label: needs-human, mention: ["@lead"]}}`)
		if !strings.Contains(yml, "slow_interval: 1s") {
			t.Fatal("the config has no slow_interval to shorten")
		}
		e.startGatedYAML(strings.Replace(yml, "slow_interval: 1s", "slow_interval: 200ms", 1))
		n := e.sim.CreateIssue(e.repo, "Escalate me", "", "agent-smith")
		e.waitState(n, 60*time.Second, lifecycle.AwaitingApproval)
		const escalated = "escalated: stage implement awaited approval"
		escalation := func() (label bool, comments int) {
			is, _ := e.sim.Issue(e.repo, n)
			return slices.ContainsFunc(is.Labels, func(l string) bool { return strings.EqualFold(l, "needs-human") }),
				e.commentsWith(n, escalated)
		}
		// The gate reads the clock once per check of a parked ticket with
		// a deadline: a second read means the first check is over.
		cycles := func(what string, after int) {
			t.Helper()
			eventually.Wait(t, 20*time.Second, what, func() bool { return clock.readsSoFar() >= after+2 })
		}
		cycles("the GateKeeper to check the parked ticket", 0)
		if label, c := escalation(); label || c != 0 {
			t.Fatalf("before the deadline: escalation label %v, %d escalation comments; want none", label, c)
		}

		seen := clock.advance(2 * time.Hour)
		eventually.Wait(t, 20*time.Second, "the escalation label and comment", func() bool {
			label, c := escalation()
			return label && c == 1
		})
		cycles("another GateKeeper check past the deadline", clock.readsSoFar())
		if _, c := escalation(); c != 1 || e.commentsWith(n, "it still awaits approval. @lead") != 1 {
			t.Errorf("%d escalation comments (clock read %d times since the advance), want 1 mentioning @lead", c, clock.readsSoFar()-seen)
		}
		if s := e.state(n); s != lifecycle.AwaitingApproval {
			t.Fatalf("after the escalation: state %s, want still awaiting-approval", s)
		}
		if got := e.runLines("gated", n); len(got) != 1 {
			t.Fatalf("stage runs %q after the escalation, want plan alone", got)
		}

		if err := e.sim.AddComment(e.repo, n, "/agent-smith approve"); err != nil {
			t.Fatal(err)
		}
		e.waitState(n, 60*time.Second, lifecycle.Done)
		if want := []string{"plan review=", "implement review=", "test review="}; !slices.Equal(e.runLines("gated", n), want) {
			t.Errorf("stage runs %q, want %q", e.runLines("gated", n), want)
		}
	})
}

// A project that only polls approves by label: the poller's listing hands
// agent-smith:approved to the gate, which learns who added it from the
// ticket's history and removes it in the move.
func TestApprovalGateByLabelWhilePolling(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		e.projectExtra = "    polling: {enabled: true, interval: 1s}\n"
		e.startGated("replica-a", "approval", config.RolePoller, config.RoleConsumer, config.RoleHousekeeping)
		n := e.sim.CreateIssue(e.repo, "Gate me by label", "", "agent-smith")
		e.waitState(n, 60*time.Second, lifecycle.AwaitingApproval)
		approved := labels.Approved()
		e.approveByLabel(n, approved)
	})
}

// approver is a second person with write access, who may approve.
const approver = "alice"

// Under distinct_from_trigger, who added the trigger label may not approve
// the run: their approval is answered with a refusal and the ticket stays
// parked; another approver's approval runs the gated stage.
func TestApprovalGateDistinctFromTrigger(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		e.sim.SetUserRole(approver, trackersim.RoleWrite)
		e.startGated("replica-a", "{approval: {distinct_from_trigger: true}}")
		n := e.sim.CreateIssue(e.repo, "Gate me twice", "", "agent-smith")
		e.waitState(n, 60*time.Second, lifecycle.AwaitingApproval)
		if err := e.sim.AddComment(e.repo, n, "/agent-smith approve"); err != nil {
			t.Fatal(err)
		}
		eventually.Wait(t, 20*time.Second, "the refusal reply", func() bool {
			return e.commentsWith(n, "triggered this run and may not approve it too") == 1
		})
		if s := e.state(n); s != lifecycle.AwaitingApproval {
			t.Fatalf("after the trigger's own approval: state %s, want still awaiting-approval", s)
		}
		if got := e.runLines("gated", n); len(got) != 1 {
			t.Fatalf("stage runs %q after a refused approval, want plan alone", got)
		}
		if err := e.sim.As(approver).AddComment(e.repo, n, "/agent-smith approve"); err != nil {
			t.Fatal(err)
		}
		e.waitState(n, 60*time.Second, lifecycle.Done)
		if want := []string{"plan review=", "implement review=", "test review="}; !slices.Equal(e.runLines("gated", n), want) {
			t.Errorf("stage runs %q, want %q", e.runLines("gated", n), want)
		}
		if got := e.commentsWith(n, "approved by "+e.pc.Actor(approver)); got != 1 {
			t.Errorf("%d approval replies naming %s, want 1", got, approver)
		}
	})
}

// With max_rejections: 1 the first rejection sends the ticket back a
// stage and the second fails it, with a comment saying why.
func TestApprovalGateMaxRejectionsFails(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		e.startGated("replica-a", "{approval: {max_rejections: 1}}")
		n := e.sim.CreateIssue(e.repo, "Reject me twice", "", "agent-smith")
		e.waitState(n, 60*time.Second, lifecycle.AwaitingApproval)
		if err := e.sim.AddComment(e.repo, n, "/agent-smith reject too broad"); err != nil {
			t.Fatal(err)
		}
		eventually.Wait(t, 60*time.Second, "plan to run again", func() bool { return len(e.runLines("gated", n)) == 2 })
		e.waitState(n, 60*time.Second, lifecycle.AwaitingApproval)
		if err := e.sim.AddComment(e.repo, n, "/agent-smith reject still too broad"); err != nil {
			t.Fatal(err)
		}
		e.waitState(n, 60*time.Second, lifecycle.Failed)
		if got := e.commentsWith(n, "rejection 2: more than max_rejections 1"); got != 1 {
			t.Errorf("%d failure comments naming the limit, want 1", got)
		}
		if want := []string{"plan review=", "plan review=too broad"}; !slices.Equal(e.runLines("gated", n), want) {
			t.Errorf("stage runs %q, want %q", e.runLines("gated", n), want)
		}
	})
}

// `/agent-smith cancel` on a parked ticket fails it: the comment is on the
// ticket before the failed label, and no stage's request is queued.
func TestApprovalGateCancelParked(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		e.startGated("replica-a", "approval")
		n := e.sim.CreateIssue(e.repo, "Cancel me", "", "agent-smith")
		e.waitState(n, 60*time.Second, lifecycle.AwaitingApproval)
		if err := e.sim.AddComment(e.repo, n, "/agent-smith cancel"); err != nil {
			t.Fatal(err)
		}
		e.waitState(n, 60*time.Second, lifecycle.Failed)
		is, _ := e.sim.Issue(e.repo, n)
		var commented time.Time
		for _, c := range is.Comments {
			if strings.Contains(c.Body, "failed:") && strings.Contains(c.Body, "while awaiting approval") {
				commented = c.At
			}
		}
		if commented.IsZero() {
			t.Fatalf("no failure comment among %d comments", len(is.Comments))
		}
		failedLabel := labels.Label(lifecycle.Failed)
		for _, w := range e.sim.Writes() {
			if w.Number == n && slices.Contains(w.After, failedLabel) && !slices.Contains(w.Before, failedLabel) {
				if w.At.Before(commented) {
					t.Errorf("failed label written at %s, before the comment at %s", w.At, commented)
				}
				break
			}
		}
		if c := e.countAudit(n, func(ev lifecycle.Event) bool {
			return ev.From == lifecycle.AwaitingApproval && ev.To == lifecycle.Enqueued
		}); c != 0 {
			t.Errorf("%d moves from awaiting-approval to enqueued, want 0", c)
		}
		rdb := e.redis.Client(t)
		q, _ := rdb.LRange(t.Context(), keys.Queue(), 0, -1).Result()
		for _, v := range q {
			if r, err := lifecycle.DecodeRequest([]byte(v)); err == nil && r.Ref.String() == refOf(e, n).String() {
				t.Errorf("a request queued for the cancelled ticket: stage %q", r.Stage)
			}
		}
		if got := e.runLines("gated", n); len(got) != 1 {
			t.Errorf("stage runs %q, want plan alone", got)
		}
	})
}

// A project on webhooks approves by label from the label event, which
// names who added it: an outsider's label is refused and removed, the
// ticket stays parked; a collaborator's runs the gated stage.
func TestApprovalGateByLabelWebhook(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		e.startGated("replica-a", "approval")
		n := e.sim.CreateIssue(e.repo, "Gate me by webhook label", "", "agent-smith")
		e.waitState(n, 60*time.Second, lifecycle.AwaitingApproval)
		approved := labels.Approved()
		if err := e.sim.As(outsider).AddLabels(e.repo, n, approved); err != nil {
			t.Fatal(err)
		}
		eventually.Wait(t, 20*time.Second, "the refusal reply and the label removed", func() bool {
			is, _ := e.sim.Issue(e.repo, n)
			return e.commentsWith(n, e.pc.Actor(outsider)+" may not approve") == 1 && !slices.Contains(is.Labels, approved)
		})
		if s := e.state(n); s != lifecycle.AwaitingApproval {
			t.Fatalf("after an outsider's label: state %s, want still awaiting-approval", s)
		}
		e.approveByLabel(n, approved)
	})
}

// A parked ticket closed on the tracker, or whose trigger label is
// removed, leaves the gate from the webhook alone (a replica without the
// poller and housekeeping): Failed, outcome cancelled, one comment with
// the cause, as an Enqueued ticket would.
func TestParkedTicketClosedOrUntriggeredLeavesGate(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		e.startGated("replica-a", "approval", config.RoleReceiver, config.RoleConsumer)
		closed := e.sim.CreateIssue(e.repo, "Close me while parked", "", "agent-smith")
		untriggered := e.sim.CreateIssue(e.repo, "Untrigger me while parked", "", "agent-smith")
		e.waitState(closed, 60*time.Second, lifecycle.AwaitingApproval)
		e.waitState(untriggered, 60*time.Second, lifecycle.AwaitingApproval)
		if err := e.sim.SetOpen(e.repo, closed, false); err != nil {
			t.Fatal(err)
		}
		if err := e.sim.RemoveLabel(e.repo, untriggered, "agent-smith"); err != nil {
			t.Fatal(err)
		}
		for n, cause := range map[int]string{closed: lifecycle.CauseClosed, untriggered: lifecycle.CauseUntriggered} {
			e.waitState(n, 30*time.Second, lifecycle.Failed)
			if c := e.commentsWith(n, "cancelled ("+cause+")"); c != 1 {
				t.Errorf("issue %d: %d comments saying cancelled (%s), want 1", n, c, cause)
			}
			e.waitAudit(n, 1, "the cancelled move in the audit", func(ev lifecycle.Event) bool {
				return ev.Kind == lifecycle.EventTransition && ev.From == lifecycle.AwaitingApproval && ev.To == lifecycle.Failed && ev.Outcome == "cancelled"
			})
		}
	})
}

// approveByLabel has the tracker's person add the approval label to
// parked issue n and checks that the gated stages ran to Done, the label
// removed and one reply naming who added it.
func (e *env) approveByLabel(n int, approved string) {
	t := e.t
	t.Helper()
	if err := e.sim.AddLabels(e.repo, n, approved); err != nil {
		t.Fatal(err)
	}
	e.waitState(n, 60*time.Second, lifecycle.Done)
	is, _ := e.sim.Issue(e.repo, n)
	if slices.Contains(is.Labels, approved) {
		t.Errorf("labels %q: the approval label left behind", is.Labels)
	}
	if want := []string{"plan review=", "implement review=", "test review="}; !slices.Equal(e.runLines("gated", n), want) {
		t.Errorf("stage runs %q, want %q", e.runLines("gated", n), want)
	}
	if got := e.commentsWith(n, "approved by "+e.pc.Actor(trackersim.HumanLogin)); got != 1 {
		t.Errorf("%d approval replies naming who added the label, want 1", got)
	}
}

// The account the daemon writes with may not decide a gate, even listed
// among the approvers with write access: its approval by comment is
// refused with one reply saying why and the ticket stays parked; a
// listed person's approval then runs the gated stage. A pipeline handed
// the daemon's token would otherwise approve its own plan.
func TestApprovalGateRefusesTheDaemonsOwnAccount(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		bot := trackersim.BotLogin
		e.sim.SetUserRole(bot, trackersim.RoleWrite)
		e.sim.SetUserRole(approver, trackersim.RoleWrite)
		e.startGated("replica-a", fmt.Sprintf("{approval: {approvers: {users: [%q, %q]}}}", e.pc.Actor(bot), e.pc.Actor(approver)))
		n := e.sim.CreateIssue(e.repo, "Approve yourself", "", "agent-smith")
		e.waitState(n, 60*time.Second, lifecycle.AwaitingApproval)

		if err := e.sim.As(bot).AddComment(e.repo, n, "/agent-smith approve"); err != nil {
			t.Fatal(err)
		}
		refusal := e.pc.Actor(bot) + " is the account agentsmithd writes with and may not approve or reject stage implement"
		eventually.Wait(t, 20*time.Second, "the refusal reply", func() bool { return e.commentsWith(n, refusal) >= 1 })
		if got := e.commentsWith(n, "approved by "+e.pc.Actor(bot)); got != 0 {
			t.Fatalf("%d replies saying the daemon's account approved, want none", got)
		}
		if s := e.state(n); s != lifecycle.AwaitingApproval {
			t.Fatalf("after the daemon's own approval: state %s, want still awaiting-approval", s)
		}
		if got := e.runLines("gated", n); len(got) != 1 {
			t.Fatalf("stage runs %q after a refused approval, want plan alone", got)
		}

		if err := e.sim.As(approver).AddComment(e.repo, n, "/agent-smith approve"); err != nil {
			t.Fatal(err)
		}
		e.waitState(n, 60*time.Second, lifecycle.Done)
		if want := []string{"plan review=", "implement review=", "test review="}; !slices.Equal(e.runLines("gated", n), want) {
			t.Errorf("stage runs %q, want %q", e.runLines("gated", n), want)
		}
		if got := e.commentsWith(n, refusal); got != 1 {
			t.Errorf("%d refusal replies, want 1", got)
		}
	})
}
