package lifecycle_test

import (
	"context"
	"errors"
	"go/ast"
	"path/filepath"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/astguard"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// Every claim write asks the transition table first: with its row taken
// out, the write is refused and the ticket, the comments and the queue stay
// as they were.
func TestClaimWritesAreRefusedWithoutTheirTransitionRow(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to lifecycle.State
		attempts int // recorded in Redis before the claim
	}{
		{"claim", lifecycle.Pending, lifecycle.Enqueued, 0},
		{"attempts used up", lifecycle.Pending, lifecycle.Failed, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := lifecycletest.New(t, 3)
			ctx := context.Background()
			n := w.Sim.CreateIssue("acme/app", "refused", "", "agent-smith")
			if tc.attempts > 0 {
				if err := w.RDB.HSet(ctx, keys.Attempts(), lifecycletest.Ref(n).Key(), tc.attempts).Err(); err != nil {
					t.Fatal(err)
				}
			}
			lifecycletest.WithoutTransition(t, tc.from, tc.to, lifecycle.OwnerClaimService)
			writes := len(w.Sim.Writes())
			res, err := w.Claims.Claim(ctx, lifecycletest.Ref(n), lifecycle.SourceWebhook, 1)
			if !errors.Is(err, lifecycle.ErrIllegalTransition) {
				t.Errorf("claim = %+v, %v; want refused as an illegal transition", res, err)
			}
			if s := w.State(t, n); s != lifecycle.Pending {
				t.Errorf("state %s, want pending", s)
			}
			if got := len(w.Sim.Writes()); got != writes {
				t.Errorf("%d writes to the tracker, want none", got-writes)
			}
			if is, _ := w.Sim.Issue("acme/app", n); len(is.Comments) != 0 {
				t.Errorf("comments %+v, want none before a refused write", is.Comments)
			}
			if l, _ := w.Queue.Len(ctx); l != 0 {
				t.Errorf("queue length %d, want 0", l)
			}
		})
	}
}

// Relabel and AddLabel (write.go) are the only callers of a tracker's
// Relabel in the daemon's code: a lifecycle label write anywhere else could
// skip the transition table. Tests are exempt (they play humans editing
// labels); platform packages implement Relabel and are not walked.
func TestOnlyWriteGoCallsTrackerRelabel(t *testing.T) {
	var checked int
	for _, root := range []string{".", "../housekeeping", "../cmd"} {
		checked += astguard.Walk(t, root, astguard.Options{}, func(f *astguard.File) {
			ast.Inspect(f.AST, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Relabel" {
					return true
				}
				// lifecycle.Relabel from another package is the checked write.
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "lifecycle" {
					return true
				}
				if filepath.Clean(f.Path) != "write.go" {
					t.Errorf("%s: a tracker's Relabel called outside lifecycle/write.go; write through lifecycle.Relabel", f.Fset.Position(call.Pos()))
				}
				return true
			})
		})
	}
	if checked < 20 {
		t.Fatalf("walked %d files; the walk missed the sources", checked)
	}
}
