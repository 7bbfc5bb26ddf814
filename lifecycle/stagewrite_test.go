package lifecycle_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// A stage move is one lifecycle write through the transition table: the
// old state and stage labels off, the new ones on, everything else kept;
// Done drops the stage; an unknown stage is refused before any write; the
// repair keeps the stage the labels show and removes the other stages.
func TestRelabelCarriesTheStage(t *testing.T) {
	w := lifecycletest.New(t, 3)
	p := w.Projects[lifecycletest.Project]
	labels := w.Labels.WithStages([]string{"plan", "implement", "test"})
	n := w.Sim.CreateIssue(lifecycletest.Repo, "staged", "", "agent-smith", "keep-me",
		lifecycletest.Label(lifecycle.InProgress), labels.Stage("plan"))
	tk, err := p.Tracker.Get(t.Context(), lifecycletest.Ref(n))
	if err != nil {
		t.Fatal(err)
	}
	move := func(tk *platforms.Ticket, m lifecycle.Move, owner lifecycle.Owner, want ...string) *platforms.Ticket {
		t.Helper()
		out, err := lifecycle.Relabel(t.Context(), p.Tracker, labels, tk, m, owner)
		if err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
		if is, _ := w.Sim.Issue(lifecycletest.Repo, n); !slices.Equal(is.Labels, want) {
			t.Errorf("after %+v: labels %q, want %q", m, is.Labels, want)
		}
		return out
	}
	tk = move(tk, lifecycle.Move{From: lifecycle.InProgress, To: lifecycle.Enqueued, Stage: "implement"}, lifecycle.OwnerExecutor,
		"agent-smith", "keep-me", lifecycletest.Label(lifecycle.Enqueued), labels.Stage("implement"))

	// Enqueued(implement) → InProgress(implement) leaves the stage label
	// alone: one POST, one DELETE, as an unstaged move.
	before := len(w.Sim.Writes())
	move(tk, lifecycle.Move{From: lifecycle.Enqueued, To: lifecycle.InProgress, Stage: "implement"}, lifecycle.OwnerExecutor,
		"agent-smith", "keep-me", labels.Stage("implement"), lifecycletest.Label(lifecycle.InProgress))
	if got := len(w.Sim.Writes()) - before; got != 2 {
		t.Errorf("%d writes for a move within a stage, want 2", got)
	}

	// The repair of an interrupted write keeps the furthest stage.
	if err := w.Sim.AddLabels(lifecycletest.Repo, n, labels.Stage("plan")); err != nil {
		t.Fatal(err)
	}
	tk, err = p.Tracker.Get(t.Context(), lifecycletest.Ref(n))
	if err != nil {
		t.Fatal(err)
	}
	tk = move(tk, lifecycle.Move{From: lifecycle.InProgress, To: lifecycle.InProgress, Stage: labels.StageOf(tk.Labels)}, lifecycle.OwnerLabelRepairer,
		"agent-smith", "keep-me", labels.Stage("implement"), lifecycletest.Label(lifecycle.InProgress))

	tk = move(tk, lifecycle.Move{From: lifecycle.InProgress, To: lifecycle.Done}, lifecycle.OwnerExecutor,
		"agent-smith", "keep-me", lifecycletest.Label(lifecycle.Done))

	before = len(w.Sim.Writes())
	if _, err := lifecycle.Relabel(t.Context(), p.Tracker, labels, tk, lifecycle.Move{From: lifecycle.InProgress, To: lifecycle.Enqueued, Stage: "nope"}, lifecycle.OwnerExecutor); !errors.Is(err, lifecycle.ErrIllegalTransition) {
		t.Errorf("unknown stage: err %v, want ErrIllegalTransition", err)
	}
	if got := len(w.Sim.Writes()); got != before {
		t.Errorf("a refused stage move wrote %d times", got-before)
	}
}

// Without stages a stage-looking label is a person's: a transition leaves
// it alone and writes exactly what it wrote before stages existed.
func TestRelabelWithoutStagesKeepsStageLookalikes(t *testing.T) {
	w := lifecycletest.New(t, 3)
	p := w.Projects[lifecycletest.Project]
	n := w.Sim.CreateIssue(lifecycletest.Repo, "unstaged", "", "agent-smith", w.Labels.Stage("plan"), lifecycletest.Label(lifecycle.InProgress))
	tk, err := p.Tracker.Get(t.Context(), lifecycletest.Ref(n))
	if err != nil {
		t.Fatal(err)
	}
	before := len(w.Sim.Writes())
	if _, err := lifecycle.Relabel(t.Context(), p.Tracker, w.Labels, tk, lifecycle.Move{From: lifecycle.InProgress, To: lifecycle.Done}, lifecycle.OwnerExecutor); err != nil {
		t.Fatal(err)
	}
	want := []string{"agent-smith", w.Labels.Stage("plan"), lifecycletest.Label(lifecycle.Done)}
	if is, _ := w.Sim.Issue(lifecycletest.Repo, n); !slices.Equal(is.Labels, want) {
		t.Errorf("labels %q, want %q", is.Labels, want)
	}
	if got := len(w.Sim.Writes()) - before; got != 2 {
		t.Errorf("%d writes, want 2 (one POST, one DELETE)", got)
	}
}
