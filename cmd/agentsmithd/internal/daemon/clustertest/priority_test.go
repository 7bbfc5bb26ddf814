package clustertest_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Every queue path that moves entries between lists in one script, on a
// cluster with priority levels: the take (a script over the processing
// list and every level), the requeue of a dead replica's processing list
// into the request's level, and the promotion of a delayed retry. Each
// touches several keys, so each needs them in one hash slot (level keys
// without the hash tag make every take fail with CROSSSLOT).
func TestClusterPrioritiesRetryAndRequeue(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	rdb := w.cluster.Client(t)

	// A replica that died holding a taken request of an Enqueued ticket:
	// the EnqueuedReconciler gives it back to the queue, at its level.
	requeued := w.sim.CreateIssue(gh.Repo, "taken by a dead replica", "", "agent-smith", labels.Label(lifecycle.Enqueued), "later")
	req := lifecycle.PipelineRequest{ID: "req-dead", Ref: platforms.Ref{Platform: gh.Name, Project: "app", ID: gh.ID(requeued)},
		Source: lifecycle.SourceWebhook, Attempt: 1, EnqueuedAt: time.Now().UTC(), Priority: 9}
	if err := rdb.RPush(ctx, keys.Processing("replica-gone"), req.Encode()).Err(); err != nil {
		t.Fatal(err)
	}

	// One worker, so the order of the starts is the order of the takes.
	w.startDaemon(w.config("replica-a", "concurrency: 1, lower_priority_every: 100, ",
		"    priority: {labels: {urgent: 1, later: 9}}\n"))
	w.waitState(requeued, 20*time.Second, lifecycle.Done)
	if n, err := rdb.Exists(ctx, keys.Processing("replica-gone")).Result(); err != nil || n != 0 {
		t.Errorf("dead replica's processing list: exists=%d, %v", n, err)
	}

	// The worker holds a ticket while one of each level queues up.
	hold := w.sim.CreateIssue(gh.Repo, "hold the worker", "", "agent-smith")
	w.waitState(hold, 20*time.Second, lifecycle.InProgress)
	later := w.sim.CreateIssue(gh.Repo, "later", "", "agent-smith", "later")
	normal := w.sim.CreateIssue(gh.Repo, "normal", "", "agent-smith")
	urgent := w.sim.CreateIssue(gh.Repo, "urgent", "", "agent-smith", "urgent")
	failing := w.sim.CreateIssue(gh.Repo, "urgent but will fail", "", "agent-smith", "urgent")
	eventually.Wait(t, 20*time.Second, "four tickets Enqueued", func() bool {
		return w.state(later) == lifecycle.Enqueued && w.state(normal) == lifecycle.Enqueued &&
			w.state(urgent) == lifecycle.Enqueued && w.state(failing) == lifecycle.Enqueued
	})
	w.openGate()
	for _, n := range []int{hold, later, normal, urgent} {
		w.waitState(n, 30*time.Second, lifecycle.Done)
	}
	w.waitState(failing, 30*time.Second, lifecycle.Failed)

	// Urgent first (both urgent tickets, in the order their webhooks
	// arrived), then the default level, then later; the failed attempt's
	// retry comes back through the delayed set whenever its backoff ends.
	starts := w.starts()
	pos := func(n, attempt int) int { return slices.Index(starts, gh.ID(n)+" "+strconv.Itoa(attempt)) }
	if len(starts) != 7 || pos(requeued, 1) != 0 || pos(hold, 1) != 1 || pos(failing, 2) < 0 ||
		!(max(pos(urgent, 1), pos(failing, 1)) < pos(normal, 1) && pos(normal, 1) < pos(later, 1)) {
		t.Errorf("starts %q: want the requeued ticket, the held one, both urgent, normal, later, and one retry", starts)
	}
	if got, want := w.lifecyclePath(failing), []string{"pending→enqueued", "enqueued→in-progress", "in-progress→enqueued",
		"enqueued→in-progress", "in-progress→failed"}; !slices.Equal(got, want) {
		t.Errorf("failing ticket's transitions = %q, want %q", got, want)
	}
	w.checkKeysTagged()
}
