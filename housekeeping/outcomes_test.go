package housekeeping

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/eventually"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms/github"
)

// cutTracker serves the world's sim on a port of its own that the test can
// close, so the tracker refuses connections (nothing listens), and open
// again on the same port: a tracker outage as the daemon's client sees it.
type cutTracker struct {
	t    *testing.T
	h    http.Handler
	addr string
	mu   sync.Mutex
	srv  *http.Server
}

func newCutTracker(t *testing.T, w *lifecycletest.World) *cutTracker {
	t.Helper()
	return newCutTrackerOf(t, w, w.Sim.Handler())
}

// newCutTrackerOf is newCutTracker serving h, the sim's handler wrapped.
func newCutTrackerOf(t *testing.T, w *lifecycletest.World, h http.Handler) *cutTracker {
	t.Helper()
	c := &cutTracker{t: t, h: h, addr: "127.0.0.1:0"}
	c.up()
	t.Cleanup(c.down)
	tr, err := github.New(github.Options{BaseURL: "http://" + c.addr + "/github/", Repo: lifecycletest.Repo,
		Project: lifecycletest.Project, Token: "t", Writer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	// The claim service shares the project's pointer.
	w.Projects[lifecycletest.Project].Tracker = tr
	return c
}

func (c *cutTracker) up() {
	c.t.Helper()
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		c.t.Fatal(err)
	}
	c.addr = ln.Addr().String()
	srv := &http.Server{Handler: c.h}
	go func() { _ = srv.Serve(ln) }()
	c.mu.Lock()
	c.srv = srv
	c.mu.Unlock()
}

// down closes the listener and every connection: new ones are refused.
func (c *cutTracker) down() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.srv != nil {
		_ = c.srv.Close()
		c.srv = nil
	}
}

// outcomeWorld is a world whose claims and executor report to rec, with an
// executor whose pipeline counts its runs in dir/runs, writes a result,
// and waits for dir/gate.
func outcomeWorld(t *testing.T, dir string, writeTimeout time.Duration) (*lifecycletest.World, *lifecycletest.Recorder, *cutTracker) {
	t.Helper()
	w := lifecycletest.New(t, 3)
	cut := newCutTracker(t, w)
	rec := &lifecycletest.Recorder{}
	w.Claims = lifecycle.NewClaimService(w.RDB, w.Queue, w.Projects, lifecycle.ClaimConfig{Instance: "hk", Labels: w.Labels,
		Logger: zaptest.NewLogger(t), Observer: rec})
	p := w.Projects[lifecycletest.Project]
	p.Pipeline.Command = []string{"sh", "-c", `echo run >> "$D/runs"; touch "$D/started"; ` +
		`while [ ! -f "$D/gate" ]; do sleep 0.02; done; printf '{"summary": "made it"}' > "$AGENTSMITH_RESULT_FILE"`}
	p.Pipeline.Env = map[string]string{"D": dir}
	ex := lifecycle.NewExecutor(w.RDB, w.Queue, w.Projects, lifecycle.ExecutorConfig{
		Instance: "exec-1", Concurrency: 1, HeartbeatTTL: 2 * time.Second, HeartbeatRenew: 100 * time.Millisecond,
		KillGrace: 200 * time.Millisecond, WorkDir: filepath.Join(dir, "work"), TakeWait: 100 * time.Millisecond,
		WriteTimeout: writeTimeout, Logger: zaptest.NewLogger(t), Observer: rec})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return w, rec, cut
}

func runCount(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "runs"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "run\n")
}

func transitions(rec *lifecycletest.Recorder, from, to lifecycle.State) []lifecycle.Event {
	var out []lifecycle.Event
	for _, ev := range rec.Kind(lifecycle.EventTransition) {
		if ev.From == from && ev.To == to {
			out = append(out, ev)
		}
	}
	return out
}

// A tracker that refuses connections when the pipeline ends, for longer
// than the run's final write may take: the run hands its recorded outcome
// over, no repair reverts the ticket, and once the tracker answers the
// OutcomeWriter writes Done with the run's comment, from the record: the
// pipeline ran once, the history has in-progress → done, and the comment
// is not posted again by a later cycle.
func TestTrackerOutageAtRunEndWritesTheOutcomeOnce(t *testing.T) {
	dir := t.TempDir()
	w, rec, cut := outcomeWorld(t, dir, time.Second)
	ctx := t.Context()
	n := w.Sim.CreateIssue(lifecycletest.Repo, "outage at the end", "", "agent-smith")
	ref := lifecycletest.Ref(n)
	if res, err := w.Claims.Claim(ctx, ref, lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	eventually.Wait(t, 10*time.Second, "the pipeline to start", func() bool { return exists(filepath.Join(dir, "started")) })
	cut.down()
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The run gives up on the tracker after its WriteTimeout and hands
	// over: its lock and in-flight entry go, its outcome stays.
	eventually.Wait(t, 20*time.Second, "the run to hand its outcome over", func() bool {
		_, ok, _ := runstate.OutcomeOf(ctx, w.RDB, ref)
		hb, _ := w.RDB.Exists(ctx, keys.Heartbeat(ref.Key())).Result()
		runs, _ := runstate.Runs(ctx, w.RDB)
		return ok && hb == 0 && len(runs) == 0
	})
	o, _, _ := runstate.OutcomeOf(ctx, w.RDB, ref)
	if o.To != "done" || !strings.Contains(o.Body, "made it") || o.CommentPosted || o.Attempt != 1 {
		t.Fatalf("recorded outcome %+v, want done with the result's comment, not yet posted", o)
	}
	cut.up()
	// The repairs know it from a dead run: neither cycle reverts it.
	stale := NewStaleJobDetector(w.RDB, w.Claims, StaleJobDetectorConfig{})
	if err := stale.FastCycle(ctx); err != nil {
		t.Fatal(err)
	}
	if err := stale.SlowCycle(ctx); err != nil {
		t.Fatal(err)
	}
	if err := NewLabelRepairer(w.RDB, w.Claims, LabelRepairerConfig{}).Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if s := w.State(t, n); s != lifecycle.InProgress {
		t.Fatalf("state %s after the repairs, want in-progress: the outcome waits", s)
	}
	if reqs := w.Requests(t); len(reqs) != 0 {
		t.Fatalf("queue %+v after the repairs, want empty: nothing runs again", reqs)
	}
	ow := NewOutcomeWriter(w.RDB, w.Claims, OutcomeWriterConfig{Logger: zaptest.NewLogger(t)})
	if err := ow.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ow.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	is, _ := w.Sim.Issue(lifecycletest.Repo, n)
	if s := w.Labels.StateOf(is.Labels); s != lifecycle.Done || len(w.Labels.Lifecycle(is.Labels)) != 1 {
		t.Errorf("labels %q, want done alone", is.Labels)
	}
	posted := 0
	for _, c := range is.Comments {
		if strings.Contains(c.Body, "pipeline succeeded") && strings.Contains(c.Body, "made it") {
			posted++
		}
	}
	if posted != 1 {
		t.Errorf("%d done comments, want 1: %+v", posted, is.Comments)
	}
	if got := runCount(t, dir); got != 1 {
		t.Errorf("pipeline ran %d times, want once", got)
	}
	if evs := transitions(rec, lifecycle.InProgress, lifecycle.Done); len(evs) != 1 || evs[0].Outcome != "succeeded" || evs[0].Attempt != 1 {
		t.Errorf("in-progress → done events %+v, want one, succeeded, attempt 1", evs)
	}
	if evs := transitions(rec, lifecycle.InProgress, lifecycle.Pending); len(evs) != 0 {
		t.Errorf("reverted: %+v", evs)
	}
	if _, ok, _ := runstate.OutcomeOf(ctx, w.RDB, ref); ok {
		t.Error("outcome record left after it was written")
	}
	if n, _ := w.RDB.Exists(ctx, keys.Heartbeat(ref.Key()), keys.Finished(ref.Key())).Result(); n != 1 {
		t.Errorf("%d of heartbeat and finished marker, want the finished marker alone", n)
	}
}

// A replica killed after recording its run's outcome, before writing it:
// its lock and in-flight entry stay, its liveness key is gone.
// StaleJobDetector does not revert the ticket; the OutcomeWriter adopts the
// dead run's lock, posts the comment the record holds unless it was posted
// already, and writes Failed with the escalation label.
func TestOutcomeOfAKilledReplicaIsWrittenNotReverted(t *testing.T) {
	w := lifecycletest.New(t, 3)
	rec := &lifecycletest.Recorder{}
	w.Claims = lifecycle.NewClaimService(w.RDB, w.Queue, w.Projects, lifecycle.ClaimConfig{Instance: "hk", Labels: w.Labels,
		Logger: zaptest.NewLogger(t), Observer: rec})
	ctx := t.Context()
	for _, posted := range []bool{false, true} {
		n := w.Sim.CreateIssue(lifecycletest.Repo, "killed after the record", "", "agent-smith", "agent-smith:in-progress")
		ref := lifecycletest.Ref(n)
		deadRun(t, w, n, "ghost", 3)
		o := runstate.Outcome{Ref: ref, Token: "ghost|webhook|0|tok", Instance: "ghost", Attempt: 3, To: "failed",
			Outcome: "escalated", Reason: "exit status 1", Body: "**agent-smith**: pipeline failed, recorded", EscalateLabel: "needs-human",
			CommentPosted: posted, Recorded: time.Now()}
		if ok, err := runstate.PutOutcome(ctx, w.RDB, o.Token, o); err != nil || !ok {
			t.Fatalf("record: %v %v", ok, err)
		}
		if err := NewStaleJobDetector(w.RDB, w.Claims, StaleJobDetectorConfig{}).FastCycle(ctx); err != nil {
			t.Fatal(err)
		}
		if s := w.State(t, n); s != lifecycle.InProgress {
			t.Fatalf("state %s after StaleJobDetector, want in-progress", s)
		}
		if len(w.Requests(t)) != 0 {
			t.Fatal("a request was queued for a run whose outcome waits")
		}
		if err := NewOutcomeWriter(w.RDB, w.Claims, OutcomeWriterConfig{}).Cycle(ctx); err != nil {
			t.Fatal(err)
		}
		is, _ := w.Sim.Issue(lifecycletest.Repo, n)
		if s := w.Labels.StateOf(is.Labels); s != lifecycle.Failed || !strings.Contains(strings.Join(is.Labels, ","), "needs-human") {
			t.Errorf("labels %q, want failed and the escalation label", is.Labels)
		}
		want := 1
		if posted {
			want = 0
		}
		if len(is.Comments) != want {
			t.Errorf("comment posted before: %v; %d comments, want %d", posted, len(is.Comments), want)
		}
		if runs, _ := runstate.Runs(ctx, w.RDB); len(runs) != 0 {
			t.Errorf("in-flight entries left: %+v", runs)
		}
		if _, ok, _ := runstate.OutcomeOf(ctx, w.RDB, ref); ok {
			t.Error("outcome record left after it was written")
		}
	}
	if evs := transitions(rec, lifecycle.InProgress, lifecycle.Failed); len(evs) != 2 || evs[0].Outcome != "escalated" || evs[0].Owner != lifecycle.OwnerExecutor {
		t.Errorf("in-progress → failed events %+v, want two, escalated, by the executor's transition", evs)
	}
	if evs := transitions(rec, lifecycle.InProgress, lifecycle.Pending); len(evs) != 0 {
		t.Errorf("reverted: %+v", evs)
	}
}

// An outcome whose run is still writing it (its lock held, its replica
// live) is left to the run.
func TestOutcomeWriterLeavesALiveRunsOutcome(t *testing.T) {
	w := lifecycletest.New(t, 3)
	ctx := t.Context()
	n := w.Sim.CreateIssue(lifecycletest.Repo, "still writing", "", "agent-smith", "agent-smith:in-progress")
	ref := lifecycletest.Ref(n)
	deadRun(t, w, n, "alive", 1)
	if err := w.RDB.Set(ctx, keys.Instance("alive"), "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	o := runstate.Outcome{Ref: ref, Token: "alive|webhook|0|tok", Instance: "alive", Attempt: 1, To: "done", Outcome: "succeeded", Recorded: time.Now()}
	if ok, err := runstate.PutOutcome(ctx, w.RDB, o.Token, o); err != nil || !ok {
		t.Fatalf("record: %v %v", ok, err)
	}
	if err := NewOutcomeWriter(w.RDB, w.Claims, OutcomeWriterConfig{}).Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if s := w.State(t, n); s != lifecycle.InProgress {
		t.Errorf("state %s, want in-progress: the live run writes it", s)
	}
	if holder, _, _ := runstate.Holder(ctx, w.RDB, ref); holder != o.Token {
		t.Errorf("lock holder %q, want the run's", holder)
	}
}

// A tracker that keeps failing comments (502) but takes labels: the
// writer holds the transition back for the comment only strictCommentTries
// times, then writes the label without it.
func TestOutcomeWriterGivesUpACommentThatKeepsFailing(t *testing.T) {
	w := lifecycletest.New(t, 3)
	failing := w.Sim.Handler()
	newCutTrackerOf(t, w, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/comments") {
			http.Error(rw, "bad gateway", http.StatusBadGateway)
			return
		}
		failing.ServeHTTP(rw, r)
	}))
	ctx := t.Context()
	n := w.Sim.CreateIssue(lifecycletest.Repo, "comments fail", "", "agent-smith", "agent-smith:in-progress")
	ref := lifecycletest.Ref(n)
	deadRun(t, w, n, "ghost", 1)
	o := runstate.Outcome{Ref: ref, Token: "ghost|webhook|0|tok", Instance: "ghost", Attempt: 1, To: "done",
		Outcome: "succeeded", Body: "**agent-smith**: pipeline succeeded", Recorded: time.Now()}
	if ok, err := runstate.PutOutcome(ctx, w.RDB, o.Token, o); err != nil || !ok {
		t.Fatalf("record: %v %v", ok, err)
	}
	ow := NewOutcomeWriter(w.RDB, w.Claims, OutcomeWriterConfig{WriteTimeout: 300 * time.Millisecond})
	for try := 1; try <= 3; try++ {
		if err := ow.Cycle(ctx); err == nil {
			t.Fatalf("try %d: no error with the comment failing", try)
		}
		if s := w.State(t, n); s != lifecycle.InProgress {
			t.Fatalf("try %d: state %s, want in-progress: the comment is still tried", try, s)
		}
		got, ok, _ := runstate.OutcomeOf(ctx, w.RDB, ref)
		if !ok || got.Tries != try || got.LastError == "" {
			t.Fatalf("try %d: record %+v, want %d tries with the error", try, got, try)
		}
	}
	if err := ow.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if s := w.State(t, n); s != lifecycle.Done {
		t.Errorf("state %s after the comment was given up, want done", s)
	}
	if _, ok, _ := runstate.OutcomeOf(ctx, w.RDB, ref); ok {
		t.Error("outcome record left after it was written")
	}
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }
