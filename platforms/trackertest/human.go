package trackertest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// humanPaths are the lifecycle sequences the concurrent human editor runs
// through: the successful run, and a run handed back once (shutdown or
// retry) that then fails.
var humanPaths = []struct {
	name  string
	steps []lifecycle.State
}{
	{"done", []lifecycle.State{lifecycle.Pending, lifecycle.Enqueued, lifecycle.InProgress, lifecycle.Done}},
	{"handed back then failed", []lifecycle.State{lifecycle.Pending, lifecycle.Enqueued, lifecycle.InProgress,
		lifecycle.Enqueued, lifecycle.InProgress, lifecycle.Failed}},
}

// testConcurrentHumanEditor: a person edits the ticket's other labels at
// every moment of every transition, including between the two calls of a
// two-call write, and every edit survives while the lifecycle ends where the
// daemon moved it. Run k of a path arms one human edit (add "human-k",
// remove "keep-me") just before the tracker's k-th write; the runs stop at
// the first k the path no longer reaches. A write that reports
// ErrPreconditionFailed is re-read and retried, as the executor does.
func testConcurrentHumanEditor(t *testing.T, h Harness) {
	if h.BeforeWrite == nil || h.HumanLabel == nil {
		t.Fatalf("harness lacks BeforeWrite or HumanLabel: every platform runs the concurrent human editor")
	}
	labels := lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}
	for _, path := range humanPaths {
		t.Run(path.name, func(t *testing.T) {
			tr := h.New(t)
			for k := 0; ; k++ {
				if k > 50 {
					t.Fatalf("the path made more than 50 writes")
				}
				ref := h.Create(t, fmt.Sprintf("human editor %s @%d", path.name, k), "keep-me", "agent-smith")
				added := fmt.Sprintf("human-%d", k)
				fired := h.BeforeWrite(t, ref, k, func() {
					h.HumanLabel(t, ref, added, true)
					h.HumanLabel(t, ref, "keep-me", false)
				})
				for i := 1; i < len(path.steps); i++ {
					moveRetrying(t, tr, labels, ref, path.steps[i-1], path.steps[i])
				}
				if !fired() {
					if k == 0 {
						t.Fatalf("the tracker made no write the emulator saw")
					}
					return
				}
				got := h.Labels(t, ref)
				final := path.steps[len(path.steps)-1]
				if !slices.Contains(got, added) || slices.Contains(got, "keep-me") || !slices.Contains(got, "agent-smith") {
					t.Errorf("edit before write %d: labels %q, want the human's %q added, keep-me removed, the trigger kept", k, got, added)
				}
				if life := labels.Lifecycle(got); !slices.Equal(life, []string{labels.Label(final)}) {
					t.Errorf("edit before write %d: lifecycle labels %q, want only %q", k, life, labels.Label(final))
				}
			}
		})
	}
}

// moveRetrying moves ref from → to the way lifecycle's executor does
// (moveAs): read, check the state, relabel, and on ErrPreconditionFailed
// read again and retry.
func moveRetrying(t *testing.T, tr platforms.Tracker, labels lifecycle.Labels, ref platforms.Ref, from, to lifecycle.State) {
	t.Helper()
	var err error
	for try := 0; try < 4; try++ {
		tk := mustGet(t, tr, ref)
		if s := labels.StateOf(tk.Labels); s != from {
			t.Fatalf("%s → %s: ticket is %s (labels %q)", from, to, s, tk.Labels)
		}
		if _, err = tr.Relabel(ctx(t), tk, labels.Lifecycle(tk.Labels), labels.Label(to)); err == nil {
			return
		}
		if !errors.Is(err, platforms.ErrPreconditionFailed) {
			t.Fatalf("%s → %s: %v", from, to, err)
		}
	}
	t.Fatalf("%s → %s: still failing after 4 tries: %v", from, to, err)
}
