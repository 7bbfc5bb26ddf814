package daemon_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// sendBackScript is stageScript's log line and result, with a test stage
// that fails: always for an "always" ticket, else on its first run only
// (a marker in the work dir), printing what broke and writing no result.
const sendBackScript = `echo "stage $AGENTSMITH_TICKET_ID $AGENTSMITH_STAGE $AGENTSMITH_ATTEMPT prev=$AGENTSMITH_PREVIOUS_RESULT" >> "$RUN_LOG"
if [ "$AGENTSMITH_STAGE" = test ]; then
  case "$AGENTSMITH_TITLE" in *always*) echo "tests broke: always"; exit 1 ;; esac
  m="$AGENTSMITH_WORKDIR/.agentsmith-test-failed-once"
  [ -f "$m" ] || { touch "$m"; echo "tests broke: TestCheckout"; exit 1; }
fi
printf '{"summary": "%s finished"}' "$AGENTSMITH_STAGE" > "$AGENTSMITH_RESULT_FILE"`

// sentBackOnceRuns are the stage runs of a ticket whose test stage fails
// once and sends it back to implement.
var sentBackOnceRuns = []string{
	"plan 1 prev=",
	`implement 1 prev={"summary":"plan finished","links":null}`,
	`test 1 prev={"summary":"implement finished","links":null}`,
	`implement 1 prev={"summary":"tests broke: TestCheckout","links":null}`,
	`test 1 prev={"summary":"implement finished","links":null}`,
}

// startSendBack starts a replica whose project has the stages plan →
// implement → test, test with on_failure back to implement (max 2).
func (e *env) startSendBack(instance string) { e.startSendBackGated(instance, "") }

// startSendBackGated is startSendBack with implement's gate (a YAML value,
// "" for none).
func (e *env) startSendBackGated(instance, gate string) {
	e.t.Helper()
	script := filepath.Join(e.dir, "sendback.sh")
	if err := os.WriteFile(script, []byte(sendBackScript), 0o755); err != nil {
		e.t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("      stages:\n")
	for _, s := range threeStages {
		fmt.Fprintf(&b, "        - {name: %s, command: [sh, %q]", s, script)
		if s == "test" {
			b.WriteString(", on_failure: {back_to: implement, max: 2}")
		}
		if s == "implement" && gate != "" {
			b.WriteString(", gate: " + gate)
		}
		b.WriteString("}\n")
	}
	e.startWith(e.withPipeline(instance, b.String()))
}

// A test stage that fails sends the ticket back to implement, which gets
// the test's output as $AGENTSMITH_PREVIOUS_RESULT; test passes the second
// time and the ticket reaches Done. The tracker shows the stage label go
// back, and a comment says where the ticket went.
func TestStageFailureSendsTicketBack(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		e.startSendBack("replica-a")
		n := e.sim.CreateIssue(e.repo, "Send me back", "", "agent-smith")
		e.waitState(n, 60*time.Second, lifecycle.Done)
		if got := e.runLines("stage", n); !slices.Equal(got, sentBackOnceRuns) {
			t.Errorf("stage runs %q, want %q", got, sentBackOnceRuns)
		}
		if got, want := e.stagesSeen(n), []string{"plan", "implement", "test", "implement", "test"}; !slices.Equal(got, want) {
			t.Errorf("stage labels seen on the ticket %q, want %q", got, want)
		}
		if c := e.commentsWith(n, "stage test failed; the ticket goes back to stage implement (send-back 1 of 2)"); c != 1 {
			t.Errorf("%d send-back comments, want 1", c)
		}
		if path := e.lifecyclePath(n); slices.Contains(path, "in-progress→failed") || slices.Contains(path, "in-progress→pending") {
			t.Errorf("transitions %q: the send-back is in-progress→enqueued, nothing else", path)
		}
	})
}

// A test stage that always fails sends the ticket back on_failure.max
// times, then the ticket fails, its comment saying so.
func TestStageFailurePastMaxFails(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		e.startSendBack("replica-a")
		n := e.sim.CreateIssue(e.repo, "Send me back always", "", "agent-smith")
		e.waitState(n, 60*time.Second, lifecycle.Failed)
		var stages []string
		for _, l := range e.runLines("stage", n) {
			stages = append(stages, strings.Fields(l)[0])
		}
		if want := []string{"plan", "implement", "test", "implement", "test", "implement", "test"}; !slices.Equal(stages, want) {
			t.Errorf("stages run %q, want %q", stages, want)
		}
		for i := 1; i <= 2; i++ {
			if c := e.commentsWith(n, fmt.Sprintf("goes back to stage implement (send-back %d of 2)", i)); c != 1 {
				t.Errorf("%d comments for send-back %d, want 1", c, i)
			}
		}
		if c := e.commentsWith(n, "stage test already sent the ticket back 2 times (on_failure max 2)"); c != 1 {
			t.Errorf("%d failure comments saying the send-backs are used up, want 1", c)
		}
	})
}

// A send-back into a gated stage parks the ticket for that gate again:
// the gate guards implement whenever the ticket enters it. test fails
// once, the ticket waits in awaiting-approval at implement with the
// failure's comment asking for approval, and implement runs again only
// after a second approval.
func TestSendBackToGatedStageParks(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		e.startSendBackGated("replica-a", "approval")
		n := e.sim.CreateIssue(e.repo, "Send me back through the gate", "", "agent-smith")
		e.waitState(n, 60*time.Second, lifecycle.AwaitingApproval)
		if err := e.sim.AddComment(e.repo, n, "/agent-smith approve"); err != nil {
			t.Fatal(err)
		}
		eventually.Wait(t, 60*time.Second, "test to fail and the ticket to park again at implement", func() bool {
			is, _ := e.sim.Issue(e.repo, n)
			return len(e.runLines("stage", n)) == 3 && e.state(n) == lifecycle.AwaitingApproval &&
				labels.WithStages(threeStages).StageOf(is.Labels) == "implement"
		})
		if c := e.commentsWith(n, "stage implement awaits approval"); c != 2 {
			t.Errorf("%d comments asking for implement's approval, want 2 (the plan's and the send-back's)", c)
		}
		if err := e.sim.AddComment(e.repo, n, "/agent-smith approve"); err != nil {
			t.Fatal(err)
		}
		e.waitState(n, 60*time.Second, lifecycle.Done)
		if got := e.runLines("stage", n); !slices.Equal(got, sentBackOnceRuns) {
			t.Errorf("stage runs %q, want %q", got, sentBackOnceRuns)
		}
	})
}
