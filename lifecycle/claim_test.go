package lifecycle_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/redistest"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/platforms/sim"
)

type world struct {
	sim    *sim.Sim
	claims *lifecycle.ClaimService
	queue  *queue.Queue
}

func newWorld(t *testing.T) *world {
	t.Helper()
	r := redistest.Start(t)
	rdb := r.Client(t)
	s := sim.New(sim.Options{})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	tr, err := github.New(github.Options{BaseURL: srv.URL + "/github/", Repo: "acme/app", Project: "app", Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	q := queue.New(rdb, keys.Queue())
	projects := lifecycle.Projects{"app": {Name: "app", Platform: "github", Tracker: tr, TriggerLabel: "agent-smith",
		Pipeline: lifecycle.Pipeline{Command: []string{"true"}, MaxAttempts: 3}}}
	return &world{sim: s, queue: q, claims: lifecycle.NewClaimService(rdb, q, projects, lifecycle.ClaimConfig{Instance: "test"})}
}

func ref(n int) platforms.Ref {
	return platforms.Ref{Platform: "github", Project: "app", ID: github.FormatID("acme/app", n)}
}

func TestFiftyConcurrentClaimsEnqueueOnce(t *testing.T) {
	w := newWorld(t)
	n := w.sim.CreateIssue("acme/app", "race me", "", "agent-smith", "keep-me")
	outcomes := map[lifecycle.Outcome]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 50 {
		source := lifecycle.SourceWebhook
		if i%2 == 1 {
			source = lifecycle.SourcePoll
		}
		wg.Go(func() {
			res, err := w.claims.Claim(context.Background(), ref(n), source, 1)
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
	if l, err := w.queue.Len(context.Background()); err != nil || l != 1 {
		t.Errorf("queue length = %d (%v), want 1", l, err)
	}
	is, _ := w.sim.Issue("acme/app", n)
	if got := (lifecycle.Labels{Prefix: "agent-smith"}).StateOf(is.Labels); got != lifecycle.Enqueued {
		t.Errorf("state = %s, want enqueued", got)
	}
}

func TestClaimPreChecks(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	noTrigger := w.sim.CreateIssue("acme/app", "no trigger", "")
	done := w.sim.CreateIssue("acme/app", "done", "", "agent-smith", "agent-smith:done")
	closed := w.sim.CreateIssue("acme/app", "closed", "", "agent-smith")
	if err := w.sim.SetOpen("acme/app", closed, false); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{noTrigger, done, closed} {
		res, err := w.claims.Claim(ctx, ref(n), lifecycle.SourcePoll, 1)
		if err != nil || res.Outcome != lifecycle.NotEligible || res.Reason == "" {
			t.Errorf("issue %d: %+v, %v; want not eligible with a reason", n, res, err)
		}
	}
	if l, _ := w.queue.Len(ctx); l != 0 {
		t.Errorf("queue length %d, want 0", l)
	}
}

func TestAlreadyClaimedNamesTheHolder(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	n := w.sim.CreateIssue("acme/app", "held", "", "agent-smith")
	entered := make(chan struct{})
	release := make(chan struct{})
	go func() {
		_, _ = w.claims.WithLock(ctx, ref(n), lifecycle.SourcePoll, func(context.Context) error {
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered
	res, err := w.claims.Claim(ctx, ref(n), lifecycle.SourceWebhook, 1)
	close(release)
	if err != nil || res.Outcome != lifecycle.AlreadyClaimed {
		t.Fatalf("got %+v, %v; want already claimed", res, err)
	}
	if res.Holder == nil || res.Holder.Instance != "test" || res.Holder.Source != lifecycle.SourcePoll || res.Holder.Since.IsZero() {
		t.Errorf("holder = %+v, want instance test, source poll, a since time", res.Holder)
	}
}
