package claim_test

import (
	"context"
	"sync"
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

type world struct{ *lifecycletest.World }

func newWorld(t *testing.T) *world {
	w := lifecycletest.New(t, 3)
	return &world{w}
}

func ref(n int) platforms.Ref { return lifecycletest.Ref(n) }

func TestFiftyConcurrentClaimsEnqueueOnce(t *testing.T) {
	w := newWorld(t)
	n := w.Sim.CreateIssue("acme/app", "race me", "", "agent-smith", "keep-me")
	outcomes := map[lifecycle.Outcome]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 50 {
		source := lifecycle.SourceWebhook
		if i%2 == 1 {
			source = lifecycle.SourcePoll
		}
		wg.Go(func() {
			res, err := w.Claims.Claim(context.Background(), ref(n), source, 1)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			outcomes[res.Outcome]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if outcomes[lifecycle.Claimed] != 1 {
		t.Errorf("outcomes = %v, want exactly one claimed", outcomes)
	}
	if l, err := w.Queue.Len(context.Background()); err != nil || l != 1 {
		t.Errorf("queue length = %d (%v), want 1", l, err)
	}
	is, _ := w.Sim.Issue("acme/app", n)
	if got := (lifecycle.Labels{Prefix: "agent-smith"}).StateOf(is.Labels); got != lifecycle.Enqueued {
		t.Errorf("state = %s, want enqueued", got)
	}
}

func TestClaimPreChecks(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	noTrigger := w.Sim.CreateIssue("acme/app", "no trigger", "")
	done := w.Sim.CreateIssue("acme/app", "done", "", "agent-smith", lifecycletest.Label(lifecycle.Done))
	closed := w.Sim.CreateIssue("acme/app", "closed", "", "agent-smith")
	if err := w.Sim.SetOpen("acme/app", closed, false); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{noTrigger, done, closed} {
		res, err := w.Claims.Claim(ctx, ref(n), lifecycle.SourcePoll, 1)
		if err != nil || res.Outcome != lifecycle.NotEligible || res.Reason == "" {
			t.Errorf("issue %d: %+v, %v; want not eligible with a reason", n, res, err)
		}
	}
	if l, _ := w.Queue.Len(ctx); l != 0 {
		t.Errorf("queue length %d, want 0", l)
	}
}

func TestAlreadyClaimedNamesTheHolder(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	n := w.Sim.CreateIssue("acme/app", "held", "", "agent-smith")
	entered := make(chan struct{})
	release := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		_, _ = w.Claims.WithLock(ctx, ref(n), lifecycle.SourcePoll, func(context.Context) error {
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered
	res, err := w.Claims.Claim(ctx, ref(n), lifecycle.SourceWebhook, 1)
	close(release)
	<-finished
	if err != nil || res.Outcome != lifecycle.AlreadyClaimed {
		t.Fatalf("got %+v, %v; want already claimed", res, err)
	}
	if res.Holder == nil || res.Holder.Instance != "test" || res.Holder.Source != lifecycle.SourcePoll || res.Holder.Since.IsZero() {
		t.Errorf("holder = %+v, want instance test, source poll, a since time", res.Holder)
	}
}

// A late webhook after a revert continues the attempt count instead of
// starting over, and a ticket with its attempts used up fails instead of
// running again.
func TestClaimContinuesTheAttemptCount(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	n := w.Sim.CreateIssue("acme/app", "reverted", "", "agent-smith")
	if err := w.RDB.HSet(ctx, keys.Attempts(), ref(n).Key(), 2).Err(); err != nil {
		t.Fatal(err)
	}
	res, err := w.Claims.Claim(ctx, ref(n), lifecycle.SourceWebhook, 1)
	if err != nil || res.Outcome != lifecycle.Claimed || res.Request.Attempt != 3 {
		t.Fatalf("claim = %+v, %v; want claimed as attempt 3", res, err)
	}
	m := w.Sim.CreateIssue("acme/app", "exhausted", "", "agent-smith")
	if err := w.RDB.HSet(ctx, keys.Attempts(), ref(m).Key(), 3).Err(); err != nil {
		t.Fatal(err)
	}
	res, err = w.Claims.Claim(ctx, ref(m), lifecycle.SourceWebhook, 1)
	if err != nil || res.Outcome != lifecycle.NotEligible {
		t.Fatalf("claim = %+v, %v; want not eligible", res, err)
	}
	if s := w.State(t, m); s != lifecycle.Failed {
		t.Errorf("exhausted ticket is %s, want failed", s)
	}
	if l, _ := w.Queue.Len(ctx); l != 1 {
		t.Errorf("queue length %d, want only the first ticket's request", l)
	}
}
