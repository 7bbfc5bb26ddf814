package housekeeping

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// stuckWorld is a world with a claim service whose events obs records, and
// the fixed now of a StuckDetector test.
func stuckWorld(t *testing.T) (*lifecycletest.World, *lifecycletest.Recorder, *claim.Service, time.Time) {
	w := lifecycletest.New(t, 3)
	obs := &lifecycletest.Recorder{}
	claims := claim.NewService(w.RDB, w.Queue, w.Projects, claim.Config{Instance: "hk", Labels: w.Labels,
		Logger: zaptest.NewLogger(t), Observer: obs})
	return w, obs, claims, time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
}

func TestStuckDetectorFlagsEachStayOnce(t *testing.T) {
	w, obs, claims, now := stuckWorld(t)
	running := w.Sim.CreateIssue(lifecycletest.Repo, "long run", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
	waiting := w.Sim.CreateIssue(lifecycletest.Repo, "long wait", "", "agent-smith", lifecycletest.Label(lifecycle.Enqueued))
	fresh := w.Sim.CreateIssue(lifecycletest.Repo, "just queued", "", "agent-smith", lifecycletest.Label(lifecycle.Enqueued))
	rec := runstate.Record{Ref: lifecycletest.Ref(running), Instance: "r", Token: "r|webhook|0|tok", Attempt: 1, Started: now.Add(-10 * time.Minute)}
	if ok, err := runstate.Take(t.Context(), w.RDB, rec, runstate.TakeArgs{TTL: time.Minute, Now: time.Now()}); err != nil || ok.Result != runstate.Taken {
		t.Fatalf("take run: %v %v", ok, err)
	}
	for n, at := range map[int]time.Time{waiting: now.Add(-2 * time.Minute), fresh: now.Add(-10 * time.Second)} {
		req := lifecycle.PipelineRequest{ID: "req-" + lifecycletest.Ref(n).ID, Ref: lifecycletest.Ref(n), Source: "webhook", Attempt: 1, EnqueuedAt: at}
		if err := w.Queue.Push(t.Context(), req.Encode()); err != nil {
			t.Fatal(err)
		}
	}
	claims.Projects()[lifecycletest.Project].Stuck = lifecycle.StuckThresholds{EnqueuedAfter: time.Minute, InProgressAfter: 5 * time.Minute, Comment: true}
	d := NewStuckDetector(w.RDB, w.Queue, claims, StuckDetectorConfig{Clock: func() time.Time { return now }})
	for range 2 { // the second cycle must add nothing
		if err := d.Check(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	got := obs.Kind(lifecycle.EventStuck)
	if len(got) != 2 {
		t.Fatalf("stuck events %+v, want 2 (one per stuck ticket, once)", got)
	}
	want := map[string]lifecycle.State{lifecycletest.Ref(running).ID: lifecycle.InProgress, lifecycletest.Ref(waiting).ID: lifecycle.Enqueued}
	for _, ev := range got {
		if s, ok := want[ev.Ref.ID]; !ok || ev.From != s || !strings.Contains(ev.Reason, "longer than") {
			t.Errorf("event %+v", ev)
		}
	}
	for n, wantComments := range map[int]int{running: 1, waiting: 1, fresh: 0} {
		is, _ := w.Sim.Issue(lifecycletest.Repo, n)
		if len(is.Comments) != wantComments {
			t.Errorf("issue %d has %d comments, want %d", n, len(is.Comments), wantComments)
		}
	}
	// A new run of the same ticket that sticks again is flagged again.
	if _, err := runstate.Release(t.Context(), w.RDB, rec.Ref, rec.Token, false); err != nil {
		t.Fatal(err)
	}
	rec.Token = "r|reclaim|0|tok2"
	if ok, err := runstate.Take(t.Context(), w.RDB, rec, runstate.TakeArgs{TTL: time.Minute, Now: time.Now()}); err != nil || ok.Result != runstate.Taken {
		t.Fatalf("take run: %v %v", ok, err)
	}
	if err := d.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(obs.Kind(lifecycle.EventStuck)); n != 3 {
		t.Fatalf("%d stuck events after a new stuck run, want 3", n)
	}
}

func TestCancelDetectorRequestsCancelOfClosedOrUntriggeredRuns(t *testing.T) {
	w := lifecycletest.New(t, 3)
	keep := w.Sim.CreateIssue(lifecycletest.Repo, "keep running", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
	untrig := w.Sim.CreateIssue(lifecycletest.Repo, "trigger gone", "", lifecycletest.Label(lifecycle.InProgress))
	closed := w.Sim.CreateIssue(lifecycletest.Repo, "closed", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
	if err := w.Sim.SetOpen(lifecycletest.Repo, closed, false); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{keep, untrig, closed} {
		deadRun(t, w, n, "live", 1)
	}
	d := NewCancelDetector(w.RDB, w.Claims, CancelDetectorConfig{Logger: zaptest.NewLogger(t)})
	if err := d.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]string{keep: "", untrig: lifecycle.CauseUntriggered, closed: lifecycle.CauseClosed} {
		got, err := runstate.RequestedCancel(t.Context(), w.RDB, lifecycletest.Ref(n))
		if err != nil || got != want {
			t.Errorf("issue %d: cancel request %q, %v; want %q", n, got, err, want)
		}
		if ttl := w.RDB.TTL(t.Context(), keys.Cancel(lifecycletest.Ref(n).Key())).Val(); want != "" && ttl <= 0 {
			t.Errorf("issue %d: cancel request without TTL", n)
		}
	}
}
