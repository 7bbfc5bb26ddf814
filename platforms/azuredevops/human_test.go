package azuredevops_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/azuredevops"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// lifecycle are the labels a transition removes, as the executor passes
// them.
var lifecycle = []string{"agent-smith:pending", "agent-smith:enqueued", "agent-smith:in-progress", "agent-smith:done", "agent-smith:failed"}

// humanSim is trackersim behind a proxy that can run a human's edit at the
// moment our PATCH of a work item arrives, before the sim sees it: the edit
// lands between our read and our write.
type humanSim struct {
	*trackersim.Sim
	mu      sync.Mutex
	onPatch func()
}

func newHumanSim(t *testing.T) (*humanSim, *httptest.Server) {
	t.Helper()
	h := &humanSim{Sim: trackersim.New(trackersim.Options{Tokens: []string{simToken}})}
	t.Cleanup(h.Close)
	next := h.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPatch && strings.Contains(strings.ToLower(r.URL.Path), "/_apis/wit/workitems/") {
			h.mu.Lock()
			edit := h.onPatch
			h.onPatch = nil
			h.mu.Unlock()
			if edit != nil {
				edit()
			}
		}
		next.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return h, srv
}

// beforeNextPatch arms edit to run once, when the next PATCH arrives.
func (h *humanSim) beforeNextPatch(edit func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.onPatch = edit
}

// move is the executor's moveAs in small: relabel to `to`, and on a conflict
// read the ticket again and retry, up to four times.
func move(ctx context.Context, tr platforms.Tracker, ref platforms.Ref, tk *platforms.Ticket, to string) (*platforms.Ticket, int, error) {
	var err error
	for try := 0; try < 4; try++ {
		if tk == nil {
			if tk, err = tr.Get(ctx, ref); err != nil {
				return nil, try, err
			}
		}
		var ours []string
		for _, l := range tk.Labels {
			if slices.ContainsFunc(lifecycle, func(c string) bool { return strings.EqualFold(c, l) }) {
				ours = append(ours, l)
			}
		}
		var nt *platforms.Ticket
		if nt, err = tr.Relabel(ctx, tk, ours, to); err == nil {
			return nt, try, nil
		}
		if !errors.Is(err, platforms.ErrPreconditionFailed) {
			return nil, try, err
		}
		tk = nil
	}
	return nil, 4, err
}

// TestHumanEditsTags is the concurrent human editor on Azure DevOps: a
// human adds and removes their own tags before each transition's read,
// between its read and its write, and right after its write. Every edit
// survives, a transition that raced one is refused with 412 and redone
// after a re-read, and the work item never carries two lifecycle tags.
func TestHumanEditsTags(t *testing.T) {
	ctx := context.Background()
	for _, moment := range []string{"before read", "between read and write", "after write"} {
		t.Run(moment, func(t *testing.T) {
			h, srv := newHumanSim(t)
			const repo = "Org/Human"
			tr, err := azuredevops.New(azuredevops.Options{BaseURL: srv.URL + "/ado/", Repo: repo, Project: "human", Token: simToken, Writer: "agentsmithd"})
			if err != nil {
				t.Fatal(err)
			}
			n := h.CreateIssue(repo, "edited by a human", "", "bug", "agent-smith:pending")
			ref := platforms.Ref{Platform: azuredevops.Platform, Project: "human", ID: azuredevops.FormatID(tr.Locator(), n)}

			humans := []string{"bug"} // the human's own tags, as they expect them
			step := 0
			edit := func() {
				step++
				if step%3 == 0 && len(humans) > 1 {
					gone := humans[len(humans)-1]
					humans = humans[:len(humans)-1]
					if err := h.RemoveLabel(repo, n, gone); err != nil {
						t.Errorf("human removes %s: %v", gone, err)
					}
					return
				}
				tag := fmt.Sprintf("human-%d", step)
				humans = append(humans, tag)
				if err := h.AddLabels(repo, n, tag); err != nil {
					t.Errorf("human adds %s: %v", tag, err)
				}
			}

			var tk *platforms.Ticket
			conflicts := 0
			for _, to := range []string{"agent-smith:enqueued", "agent-smith:in-progress", "agent-smith:done"} {
				switch moment {
				case "before read":
					edit()
					tk = nil // the transition reads the ticket afresh
				case "between read and write":
					if tk, err = tr.Get(ctx, ref); err != nil {
						t.Fatal(err)
					}
					h.beforeNextPatch(edit)
				}
				var tries int
				if tk, tries, err = move(ctx, tr, ref, tk, to); err != nil {
					t.Fatalf("move to %s: %v", to, err)
				}
				conflicts += tries
				if moment == "after write" {
					edit() // tk is now stale: the next transition must notice
				}
				truth, _ := h.Issue(repo, n)
				for _, l := range humans {
					if !slices.Contains(truth.Labels, l) {
						t.Errorf("after %s: human tag %q lost: %q", to, l, truth.Labels)
					}
				}
			}

			truth, _ := h.Issue(repo, n)
			if want := append(slices.Clone(humans), "agent-smith:done"); !sameSet(truth.Labels, want) {
				t.Errorf("final tags %q, want %q", truth.Labels, want)
			}
			// Each edit in the middle of a transition costs that transition
			// one refused write; an edit before the read costs none.
			if wantConflicts := map[string]int{"before read": 0, "between read and write": 3, "after write": 2}[moment]; conflicts != wantConflicts {
				t.Errorf("refused writes = %d, want %d", conflicts, wantConflicts)
			}
			for _, w := range h.Writes() {
				var ours []string
				for _, l := range w.After {
					if slices.Contains(lifecycle, l) {
						ours = append(ours, l)
					}
				}
				if len(ours) > 1 {
					t.Errorf("write by %s left two lifecycle tags: %q", w.Writer, w.After)
				}
			}
		})
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
