package lifecycle_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// A copy of the claim's request (given back after a crash, or put back from
// a dead replica's processing list) carries the claim's write answer too.
// Taken after the ticket reached Done, it must not start from that answer:
// GitLab's label write, GitHub's GraphQL one and Jira Cloud's edit do not
// refuse a write on a ticket that changed, so it would label the Done
// ticket in-progress and run it again. Only the first take of the claim's request trusts the
// answer; the copy reads the ticket and drops.
func TestChangeBetweenClaimAndTakeDuplicateAfterDone(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	for _, name := range []string{"gitlab", "github-graphql", "azuredevops", "jira-cloud"} {
		t.Run(name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "ran")
			r := newBudgetRig(t, rdb, name, []string{"touch", marker})
			n := r.s.CreateIssue(r.c.repo, "copied request", "")
			if err := r.s.AddLabels(r.c.repo, n, "agent-smith"); err != nil {
				t.Fatal(err)
			}
			r.waitState(n, lifecycle.Enqueued)
			queued, err := rdb.LRange(t.Context(), keys.Queue(), 0, -1).Result()
			if err != nil || len(queued) != 1 || !strings.Contains(queued[0], `"observed"`) {
				t.Fatalf("queue = %q, %v; want the claim's one request with its answer", queued, err)
			}
			r.startExecutor()
			r.waitState(n, lifecycle.Done)
			if err := os.Remove(marker); err != nil {
				t.Fatalf("the claim's request did not run: %v", err)
			}
			if err := rdb.RPush(t.Context(), keys.Queue(), queued[0]).Err(); err != nil {
				t.Fatal(err)
			}
			eventually.Wait(t, 10*time.Second, "the copy taken and handled", func() bool {
				if l, _ := rdb.LLen(t.Context(), keys.Queue()).Result(); l != 0 {
					return false
				}
				ps, _ := rdb.Keys(t.Context(), keys.ProcessingPattern()).Result()
				for _, p := range ps {
					if l, _ := rdb.LLen(t.Context(), p).Result(); l != 0 {
						return false
					}
				}
				return true
			})
			r.stop()
			if err := r.s.WaitIdle(t.Context()); err != nil {
				t.Fatal(err)
			}
			is, _ := r.s.Issue(r.c.repo, n)
			if slices.Contains(is.Labels, r.labels.Label(lifecycle.InProgress)) || !slices.Contains(is.Labels, r.labels.Label(lifecycle.Done)) {
				t.Errorf("labels after the copy = %q; want Done untouched", is.Labels)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("the copy of the claim's request ran the Done ticket again")
			}
		})
	}
}
