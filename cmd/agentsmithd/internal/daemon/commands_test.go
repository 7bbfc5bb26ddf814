package daemon_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// commentsWith counts the comments on issue n that contain text.
func (e *env) commentsWith(n int, text string) int {
	is, _ := e.sim.Issue(e.repo, n)
	c := 0
	for _, cm := range is.Comments {
		if strings.Contains(cm.Body, text) {
			c++
		}
	}
	return c
}

// Comment commands over each platform's comment webhook: an outsider's
// `/agent-smith retry` on a failed ticket is refused with one short reply
// and runs nothing; a collaborator's runs it again to Done; a
// collaborator's `/agent-smith cancel` stops a running ticket, failed with
// the cancellation comment naming them. The daemon's own comments (its
// failure comment, its replies) come back as comment webhooks too and
// trigger nothing.
func TestCommentCommands(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		e.startDaemon(e.config("replica-a", ""))
		n := e.sim.CreateIssue(e.repo, "flaky widget", "", "agent-smith")
		e.waitState(n, 30*time.Second, lifecycle.Failed)
		if got := len(e.starts(n)); got != 1 {
			t.Fatalf("%d runs before the retry, want 1", got)
		}
		// cancel on a running ticket (held until the gate opens).
		m := e.sim.CreateIssue(e.repo, "hold on", "", "agent-smith")
		eventually.Wait(t, 20*time.Second, "the run to start", func() bool { return len(e.starts(m)) == 1 })
		if err := e.sim.AddComment(e.repo, m, "/agent-smith cancel"); err != nil {
			t.Fatal(err)
		}
		e.waitState(m, 30*time.Second, lifecycle.Failed)
		if got := e.commentsWith(m, claim.CommandCause(e.pc.Actor(trackersim.HumanLogin))); got != 1 {
			t.Errorf("%d cancellation comments naming who asked, want 1", got)
		}

		who := e.pc.Actor(outsider)
		if err := e.sim.As(outsider).AddComment(e.repo, n, "/agent-smith retry"); err != nil {
			t.Fatal(err)
		}
		eventually.Wait(t, 20*time.Second, "the refusal reply", func() bool {
			return e.commentsWith(n, "was asked by "+claim.SafeName(who)+", who may not start runs") == 1
		})
		if s := e.state(n); s != lifecycle.Failed || len(e.starts(n)) != 1 {
			t.Fatalf("after an outsider's retry: state %s, %d runs; want failed, 1", s, len(e.starts(n)))
		}

		e.openGate()
		// Not a command: the prefix is not on the first line.
		if err := e.sim.AddComment(e.repo, n, "please\n/agent-smith retry"); err != nil {
			t.Fatal(err)
		}
		if err := e.sim.AddComment(e.repo, n, "/agent-smith retry"); err != nil {
			t.Fatal(err)
		}
		e.waitState(n, 30*time.Second, lifecycle.Done)
		if got := len(e.starts(n)); got != 2 {
			t.Errorf("%d runs, want 2 (the failure and the retry)", got)
		}
		if got := e.commentsWith(n, "retrying, as "+claim.SafeName(e.pc.Actor(trackersim.HumanLogin))+" asked"); got != 1 {
			t.Errorf("%d retry replies, want 1", got)
		}
		if got := len(e.starts(m)); got != 1 {
			t.Errorf("cancelled ticket: %d runs, want 1", got)
		}
	})
}
