package trackertest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// Stage labels as the default prefix spells them (lifecycle.Labels.Stage).
const (
	stagePlan      = "agent-smith:stage/plan"
	stageImplement = "agent-smith:stage/implement"
)

// testTwoLabelMove: a stage move takes the state and stage labels off and
// puts the next ones on in one Relabel, in one write where the platform has
// one (GitHub: one POST of both adds, then one DELETE per remove), while a
// person edits the ticket's other labels before each of its writes; every
// edit survives and the ticket ends with exactly the two new lifecycle
// labels. A label both removed and added stays.
func testTwoLabelMove(t *testing.T, h Harness) {
	if h.BeforeWrite == nil || h.HumanLabel == nil {
		t.Fatalf("harness lacks BeforeWrite or HumanLabel: every platform runs the concurrent human editor")
	}
	remove := []string{inProgress, stagePlan}
	add := []string{enqueued, stageImplement}
	writes := 1
	if h.PerLabelWrites {
		writes += len(remove)
	}

	t.Run("writes", func(t *testing.T) {
		tr := h.New(t)
		ref := h.Create(t, "two-label move", "keep-me", inProgress, stagePlan)
		more := h.BeforeWrite(t, ref, writes, func() {})
		got, err := tr.Relabel(ctx(t), mustGet(t, tr, ref), remove, add...)
		if err != nil {
			t.Fatalf("Relabel: %v", err)
		}
		want := []string{"keep-me", enqueued, stageImplement}
		if truth := h.Labels(t, ref); !slices.Equal(truth, want) || !h.sameLabels(got.Labels, want) {
			t.Errorf("emulator labels %q, returned %q, want %q", truth, got.Labels, want)
		}
		if more() {
			t.Errorf("the move made more than %d writes", writes)
		}
		// Same stage, next state: the stage label is in remove and add.
		got, err = tr.Relabel(ctx(t), got, []string{enqueued, stageImplement}, inProgress, stageImplement, "")
		if err != nil {
			t.Fatalf("Relabel keeping the stage: %v", err)
		}
		want = []string{"keep-me", stageImplement, inProgress}
		if truth := h.Labels(t, ref); !slices.Equal(truth, want) || !h.sameLabels(got.Labels, want) {
			t.Errorf("after keeping the stage: emulator labels %q, returned %q, want %q", truth, got.Labels, want)
		}
	})

	t.Run("human editor", func(t *testing.T) {
		tr := h.New(t)
		for k := 0; ; k++ {
			if k > 10 {
				t.Fatalf("the move made more than 10 writes")
			}
			ref := h.Create(t, fmt.Sprintf("two-label move @%d", k), "keep-me", "agent-smith", inProgress, stagePlan)
			added := fmt.Sprintf("human-%d", k)
			fired := h.BeforeWrite(t, ref, k, func() {
				h.HumanLabel(t, ref, added, true)
				h.HumanLabel(t, ref, "keep-me", false)
			})
			relabelRetrying(t, tr, ref, remove, add)
			if !fired() {
				if k == 0 {
					t.Fatalf("the tracker made no write the emulator saw")
				}
				return
			}
			got := h.Labels(t, ref)
			if !slices.Contains(got, added) || slices.Contains(got, "keep-me") || !slices.Contains(got, "agent-smith") {
				t.Errorf("edit before write %d: labels %q, want the human's %q added, keep-me removed, the trigger kept", k, got, added)
			}
			var ours []string
			for _, l := range got {
				if platforms.HasLabelPrefix(h.Platform, l, "agent-smith:") {
					ours = append(ours, l)
				}
			}
			if !slices.Equal(slices.Sorted(slices.Values(ours)), []string{enqueued, stageImplement}) {
				t.Errorf("edit before write %d: lifecycle labels %q, want %q", k, ours, add)
			}
		}
	})
}

// relabelRetrying writes the move on a fresh read and, on
// ErrPreconditionFailed (a conditional platform that saw the person's
// edit), reads again and retries, as lifecycle's writers do.
func relabelRetrying(t *testing.T, tr platforms.Tracker, ref platforms.Ref, remove, add []string) {
	t.Helper()
	var err error
	for try := 0; try < 4; try++ {
		if _, err = tr.Relabel(ctx(t), mustGet(t, tr, ref), remove, add...); err == nil {
			return
		}
		if !errors.Is(err, platforms.ErrPreconditionFailed) {
			t.Fatalf("Relabel: %v", err)
		}
	}
	t.Fatalf("Relabel still failing after 4 tries: %v", err)
}
