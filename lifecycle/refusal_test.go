package lifecycle_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/metrics"
	"github.com/agentsmithd/agentsmithd/lifecycle/poller"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp/trackerhttptest"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// A ticket whose label write the tracker refuses for good is not polled
// into the same refusal every cycle: over 31 one-minute poll cycles it is
// written at minutes 0, 5 and 15 (backoff 5 min, doubling), told once,
// counted in agentsmith_tracker_refusals_total; a person's label edit ends
// the backoff at the next cycle.
func TestPollerBacksOffATicketRefusedForGood(t *testing.T) {
	w := lifecycletest.New(t, 3)
	ctx := t.Context()
	clock := trackerhttptest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	m := metrics.New(metrics.Config{})
	claims := claim.NewService(w.RDB, w.Queue, w.Projects, claim.Config{Instance: "test", Labels: w.Labels,
		Clock: clock.Now, Logger: zaptest.NewLogger(t), Observer: m})
	poller := poller.NewPoller(claims, zaptest.NewLogger(t))

	n := w.RefusedIssue(t)
	var wroteAt []int
	for minute := 0; minute <= 30; minute++ {
		before := w.Sim.Stats().Calls[lifecycletest.GitHubLabelWrite]
		if _, err := poller.PollOnce(ctx, lifecycletest.Project); err != nil {
			t.Errorf("minute %d: poll failed: %v (a refusal for good is an outcome, not an error)", minute, err)
		}
		if w.Sim.Stats().Calls[lifecycletest.GitHubLabelWrite] != before {
			wroteAt = append(wroteAt, minute)
		}
		clock.Advance(time.Minute)
	}
	if want := []int{0, 5, 15}; !slices.Equal(wroteAt, want) {
		t.Errorf("label writes at minutes %v, want %v", wroteAt, want)
	}
	is, _ := w.Sim.Issue(lifecycletest.Repo, n)
	if len(is.Comments) != 1 || !strings.Contains(is.Comments[0].Body, "403") {
		t.Fatalf("comments %+v, want one naming the 403", is.Comments)
	}
	if got := refusalsCounted(t, m); got != float64(len(wroteAt)) {
		t.Errorf("agentsmith_tracker_refusals_total = %v, want %d", got, len(wroteAt))
	}

	// A person edits the labels: tried at the next cycle, told nothing new.
	if err := w.Sim.AddLabels(lifecycletest.Repo, n, "needs-review"); err != nil {
		t.Fatal(err)
	}
	before := w.Sim.Stats().Calls[lifecycletest.GitHubLabelWrite]
	if _, err := poller.PollOnce(ctx, lifecycletest.Project); err != nil {
		t.Error(err)
	}
	if got := w.Sim.Stats().Calls[lifecycletest.GitHubLabelWrite] - before; got != 1 {
		t.Errorf("after the ticket changed: %d label writes, want 1", got)
	}
	// Once the tracker accepts the write, the ticket is claimed.
	w.Sim.RefuseLabelWrites(lifecycletest.Repo, n, false)
	if err := w.Sim.AddLabels(lifecycletest.Repo, n, "fixed"); err != nil {
		t.Fatal(err)
	}
	if claimed, err := poller.PollOnce(ctx, lifecycletest.Project); err != nil || claimed != 1 {
		t.Errorf("after the fix: claimed %d, %v; want 1", claimed, err)
	}
	if is, _ := w.Sim.Issue(lifecycletest.Repo, n); len(is.Comments) != 1 {
		t.Errorf("%d comments, want 1", len(is.Comments))
	}
}

// refusalsCounted sums agentsmith_tracker_refusals_total over its series.
func refusalsCounted(t *testing.T, m *metrics.Metrics) float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == "agentsmith_tracker_refusals_total" {
			for _, mt := range mf.GetMetric() {
				sum += mt.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// The executor's final write refused for good (GitHub 403 on InProgress →
// Done) is written once, not three times, tells the ticket once and is
// counted; the StaleJobDetector that takes the dead run over then leaves
// the unchanged ticket alone instead of repeating the refused revert every
// cycle.
func TestExecutorsFinalTransitionRefusedForGoodEndsWithOneComment(t *testing.T) {
	w := lifecycletest.New(t, 3)
	ctx := t.Context()
	dir := t.TempDir()
	m := metrics.New(metrics.Config{})
	consumertest.StartExecutorWith(t, w, dir, time.Second, func(cfg *consumer.ExecutorConfig) { cfg.Observer = m })
	n := w.Sim.CreateIssue(lifecycletest.Repo, "refused at the end", "", "agent-smith")
	if res, err := w.Claims.Claim(ctx, lifecycletest.Ref(n), lifecycle.SourcePoll, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	eventually.Wait(t, 10*time.Second, "the pipeline to start", func() bool { return lifecycletest.Exists(filepath.Join(dir, "started")) })
	w.Sim.RefuseLabelWrites(lifecycletest.Repo, n, true)
	writes := w.Sim.Stats().Calls[lifecycletest.GitHubLabelWrite]
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ref := lifecycletest.Ref(n)
	eventually.Wait(t, 10*time.Second, "the run's heartbeat to end", func() bool {
		holder, _, err := runstate.Holder(ctx, w.RDB, ref)
		return err == nil && holder == "" && lifecycletest.Exists(filepath.Join(dir, "finished"))
	})
	if got := w.Sim.Stats().Calls[lifecycletest.GitHubLabelWrite] - writes; got != 1 {
		t.Errorf("the executor wrote the refused transition %d times, want 1", got)
	}
	is, _ := w.Sim.Issue(lifecycletest.Repo, n)
	if len(is.Comments) != 1 || !strings.Contains(is.Comments[0].Body, "403") {
		t.Fatalf("comments %+v, want one naming the 403", is.Comments)
	}
	if got := refusalsCounted(t, m); got != 1 {
		t.Errorf("agentsmith_tracker_refusals_total = %v, want 1", got)
	}
	// Housekeeping takes the dead run over, cycle after cycle.
	writes = w.Sim.Stats().Calls[lifecycletest.GitHubLabelWrite]
	d := housekeeping.NewStaleJobDetector(w.RDB, w.Claims, housekeeping.StaleJobDetectorConfig{Logger: zaptest.NewLogger(t)})
	for range 5 {
		if err := d.FastCycle(ctx); err != nil {
			t.Errorf("fast cycle: %v", err)
		}
		if err := d.SlowCycle(ctx); err != nil {
			t.Errorf("slow cycle: %v", err)
		}
	}
	if got := w.Sim.Stats().Calls[lifecycletest.GitHubLabelWrite] - writes; got != 0 {
		t.Errorf("housekeeping repeated the refused write %d times over 5 cycles, want 0", got)
	}
	if is, _ := w.Sim.Issue(lifecycletest.Repo, n); len(is.Comments) != 1 {
		t.Errorf("%d comments, want 1", len(is.Comments))
	}
}

// Two replicas meeting the same refusal of the same ticket at once tell it
// once: the told mark is swapped atomically before the comment.
func TestRacingReplicasTellARefusalOnce(t *testing.T) {
	w := lifecycletest.New(t, 3)
	ctx := t.Context()
	n := w.Sim.CreateIssue(lifecycletest.Repo, "refused on two replicas", "", "agent-smith")
	tk, err := w.Projects[lifecycletest.Project].Tracker.Get(ctx, lifecycletest.Ref(n))
	if err != nil {
		t.Fatal(err)
	}
	p := w.Projects[lifecycletest.Project]
	refusal := platforms.Rejected(403, errors.New("403 Resource not accessible by integration"))
	const rounds = 100
	for round := 0; round < rounds; round++ {
		// A success forgets the refusal, so each round's refusal is told.
		lifecycle.NewRefusals(w.RDB, lifecycle.RefusalsConfig{Logger: zap.NewNop()}).Forget(ctx, tk.Ref)
		var wg sync.WaitGroup
		for i := 0; i < 2; i++ {
			r := lifecycle.NewRefusals(w.RDB, lifecycle.RefusalsConfig{Instance: fmt.Sprintf("r%d", i), Labels: w.Labels, Logger: zap.NewNop()})
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, ok := r.Refused(ctx, p, tk, "label", lifecycle.OwnerClaimService, lifecycle.SourcePoll, refusal); !ok {
					t.Error("a rejected write not taken as refused")
				}
			}()
		}
		wg.Wait()
	}
	is, _ := w.Sim.Issue(lifecycletest.Repo, n)
	if len(is.Comments) != rounds {
		t.Fatalf("%d comments after %d rounds of two racing replicas, want one a round", len(is.Comments), rounds)
	}
}

// The index of refused tickets drops the entries whose records have
// expired when a later refusal is stored, so it stays bounded without a
// reader listing it.
func TestRefusalIndexTrimsExpiredEntries(t *testing.T) {
	w := lifecycletest.New(t, 3)
	ctx := t.Context()
	p := w.Projects[lifecycletest.Project]
	refusal := platforms.Rejected(403, errors.New("403 Resource not accessible by integration"))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	r := lifecycle.NewRefusals(w.RDB, lifecycle.RefusalsConfig{Labels: w.Labels, Logger: zap.NewNop(), Clock: clock})
	refuse := func(title string) {
		t.Helper()
		n := w.Sim.CreateIssue(lifecycletest.Repo, title, "", "agent-smith")
		tk, err := p.Tracker.Get(ctx, lifecycletest.Ref(n))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := r.Refused(ctx, p, tk, "label", lifecycle.OwnerClaimService, lifecycle.SourcePoll, refusal); !ok {
			t.Fatal("a rejected write not taken as refused")
		}
	}
	refuse("old refusal")
	now = now.Add(keys.TrackerRefusalTTL + 48*time.Hour)
	refuse("new refusal")
	if n, err := w.RDB.ZCard(ctx, keys.TrackerRefusals()).Result(); err != nil || n != 1 {
		t.Fatalf("index holds %d entries (err %v), want 1: the expired one trimmed", n, err)
	}
}
