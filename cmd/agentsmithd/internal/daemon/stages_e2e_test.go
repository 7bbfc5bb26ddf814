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
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// stageScript logs "stage <id> <stage> <attempt> prev=<previous result>",
// holds the implement stage of a "hold" ticket until the gate opens, and
// writes its result for the next stage.
const stageScript = `echo "stage $AGENTSMITH_TICKET_ID $AGENTSMITH_STAGE $AGENTSMITH_ATTEMPT prev=$AGENTSMITH_PREVIOUS_RESULT" >> "$RUN_LOG"
case "$AGENTSMITH_TITLE" in *hold*) [ "$AGENTSMITH_STAGE" = implement ] && while [ ! -f "$GATE" ]; do sleep 0.05; done ;; esac
printf '{"summary": "%s finished"}' "$AGENTSMITH_STAGE" > "$AGENTSMITH_RESULT_FILE"`

var threeStages = []string{"plan", "implement", "test"}

// startStaged starts a replica whose project has the stages plan →
// implement → test, each running stageScript.
func (e *env) startStaged(instance string) {
	e.t.Helper()
	script := filepath.Join(e.dir, "stage.sh")
	if err := os.WriteFile(script, []byte(stageScript), 0o755); err != nil {
		e.t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("      stages:\n")
	for _, s := range threeStages {
		fmt.Fprintf(&b, "        - {name: %s, command: [sh, %q]}\n", s, script)
	}
	e.startWith(e.withPipeline(instance, b.String()))
}

// runLines are ticket n's lines of a stage script that starts each line
// with "<prefix> <id> ", in order, without that start.
func (e *env) runLines(prefix string, n int) []string {
	b, _ := os.ReadFile(e.runLog)
	start := prefix + " " + e.pc.ID(n) + " "
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, start); ok {
			out = append(out, rest)
		}
	}
	return out
}

// stagesSeen are the stage labels issue n carried, in the order the
// tracker's writes put them on.
func (e *env) stagesSeen(n int) []string {
	staged := labels.WithStages(threeStages)
	var seen []string
	for _, w := range e.sim.Writes() {
		if w.Number != n {
			continue
		}
		if s := staged.StageOf(w.After); s != "" && (len(seen) == 0 || seen[len(seen)-1] != s) {
			seen = append(seen, s)
		}
	}
	return seen
}

// A ticket of a project with three stages runs plan, implement and test in
// turn, each stage handed the previous one's result, shows each stage on
// the tracker in order, moves between stages in one transition each
// (in-progress → enqueued), and ends Done without a stage label.
func TestThreeStagesReachDone(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		e.startStaged("replica-a")
		n := e.sim.CreateIssue(e.repo, "Stage me", "", "keep-me", "agent-smith")
		e.waitState(n, 60*time.Second, lifecycle.Done)
		want := []string{
			"plan 1 prev=",
			`implement 1 prev={"summary":"plan finished","links":null}`,
			`test 1 prev={"summary":"implement finished","links":null}`,
		}
		if got := e.runLines("stage", n); !slices.Equal(got, want) {
			t.Errorf("stage runs %q, want %q", got, want)
		}
		if got := e.stagesSeen(n); !slices.Equal(got, threeStages) {
			t.Errorf("stage labels seen on the ticket %q, want %q", got, threeStages)
		}
		if path, want := e.lifecyclePath(n), []string{"pending→enqueued", "enqueued→in-progress", "in-progress→enqueued",
			"enqueued→in-progress", "in-progress→enqueued", "enqueued→in-progress", "in-progress→done"}; !slices.Equal(path, want) {
			t.Errorf("transitions = %q, want %q", path, want)
		}
		eventually.Wait(t, 10*time.Second, "the stage label gone and the others kept", func() bool {
			is, _ := e.sim.Issue(e.repo, n)
			return labels.WithStages(threeStages).StageOf(is.Labels) == "" && slices.Contains(is.Labels, "keep-me") &&
				len(labels.WithStages(threeStages).Lifecycle(is.Labels)) == 1
		})
	})
}

// A stage whose run is lost (its heartbeat gone) is reverted by the
// StaleJobDetector with its stage label kept, and the ticket continues at
// that stage, not at the first, with the previous stage's result.
func TestStageRevertedContinuesAtItsStage(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		e.startStaged("replica-a")
		n := e.sim.CreateIssue(e.repo, "Stage me and hold", "", "agent-smith")
		rdb := e.redis.Client(t)
		eventually.Wait(t, 30*time.Second, "the implement stage running", func() bool {
			return slices.ContainsFunc(e.runLines("stage", n), func(l string) bool { return strings.HasPrefix(l, "implement ") })
		})
		// The run loses its lock: its pipeline is killed, it writes no
		// label, and the StaleJobDetector reverts the ticket.
		if err := rdb.Del(t.Context(), keys.Heartbeat(e.pc.Name+":"+e.pc.ID(n))).Err(); err != nil {
			t.Fatal(err)
		}
		eventually.Wait(t, 30*time.Second, "the revert to pending", func() bool {
			return slices.Contains(e.lifecyclePath(n), "in-progress→pending")
		})
		e.openGate()
		e.waitState(n, 60*time.Second, lifecycle.Done)
		lines := e.runLines("stage", n)
		var stages []string
		for _, l := range lines {
			stages = append(stages, strings.Fields(l)[0])
		}
		if want := []string{"plan", "implement", "implement", "test"}; !slices.Equal(stages, want) {
			t.Errorf("stages run %q (%q), want %q: the reverted stage again, not the first", stages, lines, want)
		}
		if len(lines) > 2 && !strings.Contains(lines[2], `"plan finished"`) {
			t.Errorf("the re-run of implement got %q, want the plan's result", lines[2])
		}
		for _, w := range e.sim.Writes() {
			if w.Number == n && labels.StateOf(w.Before) == lifecycle.InProgress && labels.StateOf(w.After) == lifecycle.Pending {
				if s := labels.WithStages(threeStages).StageOf(w.After); s != "implement" {
					t.Errorf("the revert left stage %q, want implement: labels %q", s, w.After)
				}
			}
		}
	})
}
