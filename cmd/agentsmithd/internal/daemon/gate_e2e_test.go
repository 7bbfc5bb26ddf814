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

// startGated starts a replica whose project has plan → implement (gate:
// approval) → test.
func (e *env) startGated(instance string, roles ...string) {
	e.t.Helper()
	script := filepath.Join(e.dir, "gated.sh")
	if err := os.WriteFile(script, []byte(gatedScript), 0o755); err != nil {
		e.t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("      stages:\n")
	for _, s := range threeStages {
		gate := ""
		if s == "implement" {
			gate = ", gate: approval"
		}
		fmt.Fprintf(&b, "        - {name: %s, command: [sh, %q]%s}\n", s, script, gate)
	}
	cfg, err := config.Parse([]byte(e.withPipeline(instance, b.String())), lookupEnv)
	if err != nil {
		e.t.Fatalf("config: %v", err)
	}
	if len(roles) > 0 {
		cfg.Roles = roles
	}
	e.startDaemon(cfg)
}

func (e *env) gatedLines(n int) []string {
	b, _ := os.ReadFile(e.runLog)
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "gated "+e.pc.ID(n)+" ") {
			out = append(out, strings.TrimPrefix(line, "gated "+e.pc.ID(n)+" "))
		}
	}
	return out
}

// A ticket parks in awaiting-approval after plan with no run and no
// heartbeat; an outsider's approval is refused; a rejection with text
// runs plan again with $AGENTSMITH_REVIEW; an approval runs implement and
// test to Done.
func TestApprovalGateParksRejectsAndApproves(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		e.startGated("replica-a")
		n := e.sim.CreateIssue(e.repo, "Gate me", "", "agent-smith")
		e.waitState(n, 60*time.Second, lifecycle.AwaitingApproval)
		staged := labels.WithStages(threeStages)
		is, _ := e.sim.Issue(e.repo, n)
		if s := staged.StageOf(is.Labels); s != "implement" {
			t.Errorf("parked at stage %q, want implement (the stage that waits)", s)
		}
		rdb := e.redis.Client(t)
		// The run releases its lock right after its last label write.
		eventually.Wait(t, 10*time.Second, "the parked ticket without run lock or heartbeat", func() bool {
			c, err := rdb.Exists(t.Context(), keys.Heartbeat(e.pc.Name+":"+e.pc.ID(n))).Result()
			return err == nil && c == 0
		})
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
		eventually.Wait(t, 60*time.Second, "plan to run again and park", func() bool {
			return len(e.gatedLines(n)) == 2 && e.state(n) == lifecycle.AwaitingApproval
		})
		if err := e.sim.AddComment(e.repo, n, "/agent-smith approve"); err != nil {
			t.Fatal(err)
		}
		e.waitState(n, 60*time.Second, lifecycle.Done)
		want := []string{"plan review=", "plan review=add a rollback step", "implement review=", "test review="}
		if got := e.gatedLines(n); !slices.Equal(got, want) {
			t.Errorf("stage runs %q, want %q", got, want)
		}
		if got := e.commentsWith(n, "approved by "+e.pc.Actor(trackersim.HumanLogin)); got != 1 {
			t.Errorf("%d approval replies naming the approver, want 1", got)
		}
	})
}

// A project that only polls approves by label: the poller's listing hands
// agent-smith:approved to the gate, which learns who added it from the
// ticket's history and removes it in the move.
func TestApprovalGateByLabelWhilePolling(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		e.projectExtra = "    polling: {enabled: true, interval: 1s}\n"
		e.startGated("replica-a", config.RolePoller, config.RoleConsumer, config.RoleHousekeeping)
		n := e.sim.CreateIssue(e.repo, "Gate me by label", "", "agent-smith")
		e.waitState(n, 60*time.Second, lifecycle.AwaitingApproval)
		approved := labels.Approved()
		if err := e.sim.AddLabels(e.repo, n, approved); err != nil {
			t.Fatal(err)
		}
		e.waitState(n, 60*time.Second, lifecycle.Done)
		is, _ := e.sim.Issue(e.repo, n)
		if slices.Contains(is.Labels, approved) {
			t.Errorf("labels %q: the approval label left behind", is.Labels)
		}
		if want := []string{"plan review=", "implement review=", "test review="}; !slices.Equal(e.gatedLines(n), want) {
			t.Errorf("stage runs %q, want %q", e.gatedLines(n), want)
		}
		if got := e.commentsWith(n, "approved by "+e.pc.Actor(trackersim.HumanLogin)); got != 1 {
			t.Errorf("%d approval replies naming who added the label, want 1", got)
		}
	})
}
