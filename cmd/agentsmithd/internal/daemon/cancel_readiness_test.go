package daemon_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// Closing a running ticket, or removing its trigger label, stops its
// pipeline and fails the ticket with a comment naming the cause, on every
// platform; nothing runs again.
func TestCloseOrUntriggerCancelsTheRun(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		e.startDaemon(e.config("replica-a", ""))
		closed := e.sim.CreateIssue(e.repo, "hold: close me", "")
		untriggered := e.sim.CreateIssue(e.repo, "hold: untrigger me", "")
		for _, n := range []int{closed, untriggered} {
			if err := e.sim.AddLabels(e.repo, n, "agent-smith"); err != nil {
				t.Fatal(err)
			}
		}
		// Started, not only labelled in-progress: a change seen in the
		// start's write answer (or the read after it) stops the run before
		// its pipeline starts, which this test is not about.
		for _, n := range []int{closed, untriggered} {
			eventually.Wait(t, 20*time.Second, "the pipeline to start", func() bool { return len(e.starts(n)) == 1 })
		}
		if err := e.sim.SetOpen(e.repo, closed, false); err != nil {
			t.Fatal(err)
		}
		if err := e.sim.RemoveLabel(e.repo, untriggered, "agent-smith"); err != nil {
			t.Fatal(err)
		}
		for n, cause := range map[int]string{closed: lifecycle.CauseClosed, untriggered: lifecycle.CauseUntriggered} {
			e.waitState(n, 20*time.Second, lifecycle.Failed)
			is, _ := e.sim.Issue(e.repo, n)
			if len(is.Comments) != 1 || !strings.Contains(is.Comments[0].Body, cause) {
				t.Errorf("issue %d comments %+v, want one naming %q", n, is.Comments, cause)
			}
			if got := e.starts(n); len(got) != 1 {
				t.Errorf("issue %d started %d times, want 1", n, len(got))
			}
		}
		e.openGate() // a pipeline that survived would now write "end"
		rdb := e.redis.Client(t)
		eventually.Wait(t, 10*time.Second, "the runs to be released", func() bool {
			n, _ := rdb.HLen(t.Context(), keys.Inflight()).Result()
			return n == 0
		})
		if b, _ := e.readRunLog(); strings.Contains(b, "end ") {
			t.Errorf("a cancelled pipeline ran to its end:\n%s", b)
		}
	})
}

// A triggered ticket with an open blocker is not claimed (NotEligible,
// recorded as blocked); when its blocker closes it is claimed and runs.
func TestBlockedTicketRunsWhenItsBlockerCloses(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		e.projectExtra = "    readiness: {require_no_open_blockers: true}\n"
		e.startDaemon(e.config("replica-a", ""))
		blocker := e.sim.CreateIssue(e.repo, "blocker", "")
		blocked := e.sim.CreateIssue(e.repo, "blocked work", "")
		if err := e.sim.AddBlocker(e.repo, blocked, blocker); err != nil {
			t.Fatal(err)
		}
		if err := e.sim.AddLabels(e.repo, blocked, "agent-smith"); err != nil {
			t.Fatal(err)
		}
		rdb := e.redis.Client(t)
		eventually.Wait(t, 20*time.Second, "the ticket to be recorded as blocked", func() bool {
			v, _ := rdb.HGet(t.Context(), keys.Blocked("app"), e.pc.ID(blocked)).Result()
			return v == e.pc.ID(blocker)
		})
		if s := e.state(blocked); s != lifecycle.Pending || len(e.starts(blocked)) != 0 {
			t.Fatalf("blocked ticket is %s with %d starts; want pending, never started", s, len(e.starts(blocked)))
		}
		if err := e.sim.SetOpen(e.repo, blocker, false); err != nil {
			t.Fatal(err)
		}
		e.waitState(blocked, 20*time.Second, lifecycle.Done)
		if n, _ := rdb.HLen(t.Context(), keys.Blocked("app")).Result(); n != 0 {
			t.Errorf("%d tickets still recorded as blocked", n)
		}
	})
}
