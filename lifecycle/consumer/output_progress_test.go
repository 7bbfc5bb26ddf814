package consumer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
)

// TestProgressCommentIsEditedInPlace: with progress: comment, a pipeline
// that appends lines to $AGENTSMITH_PROGRESS_FILE while it runs gets one
// comment on the ticket (the real GitHub SDK against the sim), edited in
// place as the lines come, not one comment per line.
func TestProgressCommentIsEditedInPlace(t *testing.T) {
	w := lifecycletest.New(t, 1)
	dir := t.TempDir()
	consumertest.StartExecutorWith(t, w, dir, time.Second, func(cfg *consumer.ExecutorConfig) { cfg.ProgressInterval = 100 * time.Millisecond })
	p := w.Projects[lifecycletest.Project]
	p.ProgressComment = true
	// Each line waits until the comment shows the one before, so the test
	// sees an edit for every line whatever the machine's speed.
	p.Pipeline.Command = []string{"sh", "-c", `for step in clone build test; do
  echo "step $step" >> "$AGENTSMITH_PROGRESS_FILE"
  while [ ! -f "$D/shown-$step" ]; do sleep 0.02; done
done`}
	n := w.ClaimIssue(t, "progress")
	for _, step := range []string{"clone", "build", "test"} {
		eventually.Wait(t, 20*time.Second, "the progress comment to show step "+step, func() bool {
			is, _ := w.Sim.Issue(lifecycletest.Repo, n)
			for _, c := range is.Comments {
				if strings.Contains(c.Body, "in progress") && strings.Contains(c.Body, "step "+step) {
					return true
				}
			}
			return false
		})
		touch(t, dir, "shown-"+step)
	}
	eventually.Wait(t, 20*time.Second, "the ticket to reach done", func() bool { return w.State(t, n) == lifecycle.Done })
	is, _ := w.Sim.Issue(lifecycletest.Repo, n)
	var progress []string
	for _, c := range is.Comments {
		if strings.Contains(c.Body, "in progress") {
			progress = append(progress, c.Body)
		}
	}
	if len(progress) != 1 || !strings.Contains(progress[0], "step clone\nstep build\nstep test") {
		t.Fatalf("progress comments %q: want one, showing every step", progress)
	}
	if edits := w.Sim.Stats().Calls["PATCH /repos/{owner}/{repo}/issues/comments/{id}"]; edits < 2 {
		t.Errorf("%d comment edits, want at least 2 (one per later step)", edits)
	}
}

func touch(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}
