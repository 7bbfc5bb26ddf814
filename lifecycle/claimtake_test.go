package lifecycle_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// A person who removes the trigger label or closes the ticket between the
// claim and the consumer's take stops the run on every platform: the
// ticket ends Failed with the cancellation comment and the pipeline never
// starts. Where the consumer writes from the claim's snapshot instead of
// reading (a tracker that answers its write with the whole ticket), the
// answer of its start is what shows the change; "answer only" clears the
// cancel request the receiver made of the person's edit, so nothing but
// that answer can tell.
func TestChangeBetweenClaimAndTake(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	changes := []struct {
		name string
		do   func(r *budgetRig, n int) error
	}{
		{"trigger removed", func(r *budgetRig, n int) error { return r.s.RemoveLabel(r.c.repo, n, "agent-smith") }},
		{"closed", func(r *budgetRig, n int) error { return r.s.SetOpen(r.c.repo, n, false) }},
	}
	for _, c := range webhookDoneBudgets {
		for _, ch := range changes {
			for _, answerOnly := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s", c.name, ch.name)
				if answerOnly {
					name += "/answer only"
				}
				t.Run(name, func(t *testing.T) {
					marker := filepath.Join(t.TempDir(), "ran")
					r := newBudgetRig(t, rdb, c.name, []string{"touch", marker})
					n := r.s.CreateIssue(r.c.repo, "changed meanwhile", "")
					if err := r.s.AddLabels(r.c.repo, n, "agent-smith"); err != nil {
						t.Fatal(err)
					}
					r.waitState(n, lifecycle.Enqueued)
					if err := ch.do(r, n); err != nil {
						t.Fatal(err)
					}
					if err := r.s.WaitIdle(t.Context()); err != nil {
						t.Fatal(err)
					}
					if answerOnly {
						ks, err := rdb.Keys(t.Context(), keys.Cancel("*")).Result()
						if err != nil {
							t.Fatal(err)
						}
						if len(ks) > 0 {
							if err := rdb.Del(t.Context(), ks...).Err(); err != nil {
								t.Fatal(err)
							}
						}
					}
					r.startExecutor()
					r.waitState(n, lifecycle.Failed)
					eventually.Wait(t, 10*time.Second, "the cancellation comment", func() bool {
						is, _ := r.s.Issue(r.c.repo, n)
						for _, cm := range is.Comments {
							if strings.Contains(cm.Body, "cancelled (") && strings.Contains(cm.Body, "not run") {
								return true
							}
						}
						return false
					})
					r.stop()
					if _, err := os.Stat(marker); err == nil {
						t.Error("the pipeline ran on a ticket changed between claim and take")
					}
				})
			}
		}
	}
}
