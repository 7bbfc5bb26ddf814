package housekeeping

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
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
	return outcomeWorldOf(t, dir, writeTimeout, nil)
}

// outcomeWorldOf is outcomeWorld with the sim's handler wrapped by wrap
// (nil: served as is).
func outcomeWorldOf(t *testing.T, dir string, writeTimeout time.Duration, wrap func(http.Handler) http.Handler) (*lifecycletest.World, *lifecycletest.Recorder, *cutTracker) {
	t.Helper()
	w := lifecycletest.New(t, 3)
	h := w.Sim.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	cut := newCutTrackerOf(t, w, h)
	rec := &lifecycletest.Recorder{}
	w.Claims = claim.NewService(w.RDB, w.Queue, w.Projects, claim.Config{Instance: "hk", Labels: w.Labels,
		Logger: zaptest.NewLogger(t), Observer: rec})
	p := w.Projects[lifecycletest.Project]
	p.Pipeline.Command = []string{"sh", "-c", `echo run >> "$D/runs"; touch "$D/started"; ` +
		`while [ ! -f "$D/gate" ]; do sleep 0.02; done; printf '{"summary": "made it"}' > "$AGENTSMITH_RESULT_FILE"`}
	p.Pipeline.Env = map[string]string{"D": dir}
	ex := consumer.NewExecutor(w.RDB, w.Queue, w.Projects, consumer.ExecutorConfig{
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
	w.Claims = claim.NewService(w.RDB, w.Queue, w.Projects, claim.Config{Instance: "hk", Labels: w.Labels,
		Logger: zaptest.NewLogger(t), Observer: rec})
	ctx := t.Context()
	for _, posted := range []bool{false, true} {
		n := w.Sim.CreateIssue(lifecycletest.Repo, "killed after the record", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
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
	n := w.Sim.CreateIssue(lifecycletest.Repo, "still writing", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
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
	failComments(t, w)
	ctx := t.Context()
	n := w.Sim.CreateIssue(lifecycletest.Repo, "comments fail", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
	ref := lifecycletest.Ref(n)
	recordDeadRunsDone(t, w, n, runstate.Outcome{Body: "**agent-smith**: pipeline succeeded", Recorded: time.Now()})
	clock := newFakeClock()
	ow := NewOutcomeWriter(w.RDB, w.Claims, OutcomeWriterConfig{WriteTimeout: 2 * time.Second, Clock: clock.Now})
	for try := 1; try <= 3; try++ {
		if err := ow.Cycle(ctx); err == nil {
			t.Fatalf("try %d: no error with the comment failing", try)
		}
		clock.Add(time.Hour) // past the record's retry backoff
		if s := w.State(t, n); s != lifecycle.InProgress {
			t.Fatalf("try %d: state %s, want in-progress: the comment is still tried", try, s)
		}
		got, ok, _ := runstate.OutcomeOf(ctx, w.RDB, ref)
		if !ok || got.Tries != try || got.CommentTries != try || got.LastError == "" || got.CommentPosted {
			t.Fatalf("try %d: record %+v, want %d tries, all on the comment, with the error", try, got, try)
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

// Redis loses its data (FLUSHALL; a failover to a replica that had not
// received the keys) while the run's final write waits for a tracker that
// refuses connections: the run re-takes its lost lock and records its
// outcome again before it hands over, so the slow cycle does not revert the
// ticket and the OutcomeWriter writes Done from the record: the pipeline
// ran once.
func TestRedisWipeDuringFinalWriteKeepsTheOutcome(t *testing.T) {
	dir := t.TempDir()
	w, rec, cut := outcomeWorld(t, dir, 3*time.Second)
	ctx := t.Context()
	n := w.Sim.CreateIssue(lifecycletest.Repo, "wipe at the end", "", "agent-smith")
	ref := lifecycletest.Ref(n)
	if res, err := w.Claims.Claim(ctx, ref, lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	eventually.Wait(t, 10*time.Second, "the pipeline to start", func() bool { return exists(filepath.Join(dir, "started")) })
	cut.down()
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 10*time.Second, "the outcome's record", func() bool {
		o, ok, _ := runstate.OutcomeOf(ctx, w.RDB, ref)
		return ok && o.Body != ""
	})
	if err := w.RDB.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 20*time.Second, "the run to record its outcome again and hand it over", func() bool {
		o, ok, _ := runstate.OutcomeOf(ctx, w.RDB, ref)
		hb, _ := w.RDB.Exists(ctx, keys.Heartbeat(ref.Key())).Result()
		return ok && o.Body != "" && hb == 0
	})
	cut.up()
	if err := NewStaleJobDetector(w.RDB, w.Claims, StaleJobDetectorConfig{}).SlowCycle(ctx); err != nil {
		t.Fatal(err)
	}
	if s := w.State(t, n); s != lifecycle.InProgress {
		t.Fatalf("state %s after the slow cycle, want in-progress: the outcome waits", s)
	}
	if err := NewOutcomeWriter(w.RDB, w.Claims, OutcomeWriterConfig{Logger: zaptest.NewLogger(t)}).Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if s := w.State(t, n); s != lifecycle.Done {
		t.Errorf("state %s, want done", s)
	}
	if got := runCount(t, dir); got != 1 {
		t.Errorf("pipeline ran %d times, want once", got)
	}
	if evs := transitions(rec, lifecycle.InProgress, lifecycle.Pending); len(evs) != 0 {
		t.Errorf("reverted: %+v", evs)
	}
}

// failOutcomeScriptOnce fails the next Lua script that names the outcomes
// hash (a PutOutcome), once, as a Redis that drops one command would.
type failOutcomeScriptOnce struct{ armed atomic.Bool }

func (h *failOutcomeScriptOnce) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *failOutcomeScriptOnce) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *failOutcomeScriptOnce) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			for _, a := range cmd.Args() {
				if a == keys.Outcomes() && h.armed.CompareAndSwap(true, false) {
					err := errors.New("injected: connection reset")
					cmd.SetErr(err)
					return err
				}
			}
		}
		return next(ctx, cmd)
	}
}

// The run's first record fails (one Redis error) and its second, with the
// comment, is made; the tracker then fails the comment (502) but takes
// labels. The run holds Done back for the comment, since a record exists,
// and hands the outcome over: the ticket stays in-progress with the
// comment's record waiting, not Done without a comment.
func TestOneRedisErrorOnTheFirstRecordKeepsTheSecond(t *testing.T) {
	dir := t.TempDir()
	w, _, _ := outcomeWorldOf(t, dir, time.Second, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/comments") && exists(filepath.Join(dir, "gate")) {
				http.Error(rw, "bad gateway", http.StatusBadGateway)
				return
			}
			h.ServeHTTP(rw, r)
		})
	})
	ctx := t.Context()
	hook := &failOutcomeScriptOnce{}
	w.RDB.AddHook(hook)
	n := w.Sim.CreateIssue(lifecycletest.Repo, "first record fails", "", "agent-smith")
	ref := lifecycletest.Ref(n)
	if res, err := w.Claims.Claim(ctx, ref, lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	eventually.Wait(t, 10*time.Second, "the pipeline to start", func() bool { return exists(filepath.Join(dir, "started")) })
	hook.armed.Store(true)
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 20*time.Second, "the run to hand its outcome over", func() bool {
		o, ok, _ := runstate.OutcomeOf(ctx, w.RDB, ref)
		hb, _ := w.RDB.Exists(ctx, keys.Heartbeat(ref.Key())).Result()
		return ok && strings.Contains(o.Body, "made it") && !o.CommentPosted && hb == 0
	})
	if hook.armed.Load() {
		t.Fatal("the first record was not failed")
	}
	if s := w.State(t, n); s != lifecycle.InProgress {
		t.Errorf("state %s, want in-progress: Done waits for its comment", s)
	}
}

// A record whose earlier tries failed for want of a tracker (Tries 5, none
// on the comment) still holds Done back for a comment the tracker fails
// (502): an outage does not use up the comment's tries.
func TestOutcomeWriterOutageTriesDoNotGiveUpTheComment(t *testing.T) {
	w := lifecycletest.New(t, 3)
	failComments(t, w)
	ctx := t.Context()
	n := w.Sim.CreateIssue(lifecycletest.Repo, "outage tries", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
	ref := lifecycletest.Ref(n)
	recordDeadRunsDone(t, w, n, runstate.Outcome{Body: "**agent-smith**: pipeline succeeded", Recorded: time.Now(), Tries: 5})
	ow := NewOutcomeWriter(w.RDB, w.Claims, OutcomeWriterConfig{WriteTimeout: 2 * time.Second})
	if err := ow.Cycle(ctx); err == nil {
		t.Fatal("no error with the comment failing")
	}
	if s := w.State(t, n); s != lifecycle.InProgress {
		t.Fatalf("state %s, want in-progress: the comment is still tried", s)
	}
	if got, _, _ := runstate.OutcomeOf(ctx, w.RDB, ref); got.Tries != 6 || got.CommentTries != 1 {
		t.Errorf("record %+v, want 6 tries, 1 on the comment", got)
	}
}

// A comment given up (its tries used) whose transition then fails too
// (every write 502) is not marked posted in the record: it was not.
func TestOutcomeWriterMarksOnlyAPostedComment(t *testing.T) {
	w := lifecycletest.New(t, 3)
	sim := w.Sim.Handler()
	newCutTrackerOf(t, w, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(rw, "bad gateway", http.StatusBadGateway)
			return
		}
		sim.ServeHTTP(rw, r)
	}))
	ctx := t.Context()
	n := w.Sim.CreateIssue(lifecycletest.Repo, "writes fail", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
	ref := lifecycletest.Ref(n)
	recordDeadRunsDone(t, w, n, runstate.Outcome{Body: "**agent-smith**: pipeline succeeded", Recorded: time.Now(), Tries: 3, CommentTries: 3})
	ow := NewOutcomeWriter(w.RDB, w.Claims, OutcomeWriterConfig{WriteTimeout: 2 * time.Second})
	if err := ow.Cycle(ctx); err == nil {
		t.Fatal("no error with every write failing")
	}
	got, ok, _ := runstate.OutcomeOf(ctx, w.RDB, ref)
	if !ok || got.CommentPosted || got.Tries != 4 {
		t.Errorf("record %+v, want it waiting, 4 tries, the comment not marked posted", got)
	}
}

// fakeClock is a clock the test moves.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Add(d time.Duration) { c.ns.Add(int64(d)) }

// A tracker that refuses connections: the first cycle tries the oldest
// record and then leaves the project's other records for the next cycle;
// the failed record is not tried again before its backoff (5 s, then
// doubling), and is once the clock passes it.
func TestOutcomeWriterBacksOffAndSkipsAFailingTracker(t *testing.T) {
	w := lifecycletest.New(t, 3)
	cut := newCutTracker(t, w)
	cut.down()
	ctx := t.Context()
	clock := newFakeClock()
	var refs []runstate.Outcome
	for i := range 2 {
		n := w.Sim.CreateIssue(lifecycletest.Repo, "down", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
		deadRun(t, w, n, "ghost", 1)
		o := runstate.Outcome{Ref: lifecycletest.Ref(n), Token: "ghost|webhook|0|tok", Instance: "ghost", Attempt: 1, To: "done",
			Outcome: "succeeded", Body: "done", Recorded: clock.Now().Add(time.Duration(i) * time.Second)}
		if ok, err := runstate.PutOutcome(ctx, w.RDB, o.Token, o); err != nil || !ok {
			t.Fatalf("record: %v %v", ok, err)
		}
		refs = append(refs, o)
	}
	ow := NewOutcomeWriter(w.RDB, w.Claims, OutcomeWriterConfig{WriteTimeout: 2 * time.Second, Clock: clock.Now})
	tries := func() (a, b int) {
		o1, _, _ := runstate.OutcomeOf(ctx, w.RDB, refs[0].Ref)
		o2, _, _ := runstate.OutcomeOf(ctx, w.RDB, refs[1].Ref)
		return o1.Tries, o2.Tries
	}
	if err := ow.Cycle(ctx); err == nil {
		t.Fatal("no error with the tracker down")
	}
	if a, b := tries(); a != 1 || b != 0 {
		t.Fatalf("tries %d, %d after one cycle, want 1, 0: the project's second record waits", a, b)
	}
	o1, _, _ := runstate.OutcomeOf(ctx, w.RDB, refs[0].Ref)
	if d := o1.NextTry.Sub(clock.Now()); d != 5*time.Second {
		t.Fatalf("next try in %v, want 5s", d)
	}
	clock.Add(4 * time.Second)
	_ = ow.Cycle(ctx) // the first backs off, the second is tried
	if a, b := tries(); a != 1 || b != 1 {
		t.Fatalf("tries %d, %d within the backoff, want 1, 1", a, b)
	}
	clock.Add(2 * time.Second)
	_ = ow.Cycle(ctx)
	if a, b := tries(); a != 2 || b != 1 {
		t.Fatalf("tries %d, %d past the first's backoff, want 2, 1", a, b)
	}
	o1, _, _ = runstate.OutcomeOf(ctx, w.RDB, refs[0].Ref)
	if d := o1.NextTry.Sub(clock.Now()); d != 10*time.Second {
		t.Fatalf("second backoff %v, want 10s", d)
	}
}

// A tracker that refuses the ticket's read for good (403): the refusal is
// reported through lifecycle.Refusals and the record backs off for the
// refusal's backoff, not the 5 s of a transient failure.
func TestOutcomeWriterBacksOffARefusedRead(t *testing.T) {
	w := lifecycletest.New(t, 3)
	sim := w.Sim.Handler()
	newCutTrackerOf(t, w, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/issues/") {
			http.Error(rw, `{"message": "Resource not accessible by integration"}`, http.StatusForbidden)
			return
		}
		sim.ServeHTTP(rw, r)
	}))
	ctx := t.Context()
	clock := newFakeClock()
	n := w.Sim.CreateIssue(lifecycletest.Repo, "read refused", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
	ref := lifecycletest.Ref(n)
	recordDeadRunsDone(t, w, n, runstate.Outcome{Body: "done", Recorded: clock.Now()})
	ow := NewOutcomeWriter(w.RDB, w.Claims, OutcomeWriterConfig{WriteTimeout: 2 * time.Second, Clock: clock.Now})
	if err := ow.Cycle(ctx); err == nil {
		t.Fatal("no error with the read refused")
	}
	got, _, _ := runstate.OutcomeOf(ctx, w.RDB, ref)
	if d := got.NextTry.Sub(clock.Now()); d < lifecycle.RefusalBackoffInitial {
		t.Errorf("next try in %v, want the refusal backoff (%v)", d, lifecycle.RefusalBackoffInitial)
	}
	if n, _ := w.RDB.Exists(ctx, keys.TrackerRefusal(ref.Key())).Result(); n != 1 {
		t.Error("refusal not recorded")
	}
}

// A ticket moved out of in-progress by hand while its pipeline ran: the run
// has nothing to write, drops its record and releases the run at once (its
// in-flight entry goes), rather than leaving both for the repairs.
func TestRunWhoseTicketLeftInProgressIsReleased(t *testing.T) {
	dir := t.TempDir()
	w, _, _ := outcomeWorld(t, dir, 3*time.Second)
	ctx := t.Context()
	n := w.Sim.CreateIssue(lifecycletest.Repo, "moved by hand", "", "agent-smith")
	ref := lifecycletest.Ref(n)
	if res, err := w.Claims.Claim(ctx, ref, lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	eventually.Wait(t, 10*time.Second, "the pipeline to start", func() bool { return exists(filepath.Join(dir, "started")) })
	if err := w.Sim.RemoveLabel(lifecycletest.Repo, n, lifecycletest.Label(lifecycle.InProgress)); err != nil {
		t.Fatal(err)
	}
	if err := w.Sim.AddLabels(lifecycletest.Repo, n, lifecycletest.Label(lifecycle.Failed)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 10*time.Second, "the run to end and release", func() bool {
		runs, _ := runstate.Runs(ctx, w.RDB)
		_, waits, _ := runstate.OutcomeOf(ctx, w.RDB, ref)
		return runCount(t, dir) == 1 && len(runs) == 0 && !waits
	})
	if s := w.State(t, n); s != lifecycle.Failed {
		t.Errorf("state %s, want failed as set by hand", s)
	}
}

// recordOutcomes keeps the outcome JSON of every outcome script sent.
type recordOutcomes struct {
	mu   sync.Mutex
	sent []runstate.Outcome
}

func (h *recordOutcomes) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *recordOutcomes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *recordOutcomes) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			for _, a := range cmd.Args() {
				var o runstate.Outcome
				if s, ok := a.(string); ok && strings.HasPrefix(s, `{"ref"`) && json.Unmarshal([]byte(s), &o) == nil && o.To != "" {
					h.mu.Lock()
					h.sent = append(h.sent, o)
					h.mu.Unlock()
				}
			}
		}
		return next(ctx, cmd)
	}
}

// The first record, made before the work branch is saved (a push may take
// minutes), already carries the comment with the pipeline's result: a
// replica killed during the save still leaves the ticket its comment.
func TestFirstOutcomeRecordCarriesTheComment(t *testing.T) {
	dir := t.TempDir()
	w, _, _ := outcomeWorld(t, dir, 3*time.Second)
	ctx := t.Context()
	hook := &recordOutcomes{}
	w.RDB.AddHook(hook)
	n := w.Sim.CreateIssue(lifecycletest.Repo, "first record", "", "agent-smith")
	ref := lifecycletest.Ref(n)
	if res, err := w.Claims.Claim(ctx, ref, lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	eventually.Wait(t, 10*time.Second, "the pipeline to start", func() bool { return exists(filepath.Join(dir, "started")) })
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 10*time.Second, "done", func() bool { return w.State(t, n) == lifecycle.Done })
	hook.mu.Lock()
	defer hook.mu.Unlock()
	if len(hook.sent) < 2 {
		t.Fatalf("%d outcome records sent, want the first and the second", len(hook.sent))
	}
	if first := hook.sent[0]; !strings.Contains(first.Body, "made it") || first.To != "done" {
		t.Errorf("first record %+v, want done with the result in its comment", first)
	}
}

// failComments cuts w's tracker so that every comment fails (502) while
// reads and label writes reach the sim.
func failComments(t *testing.T, w *lifecycletest.World) {
	t.Helper()
	sim := w.Sim.Handler()
	newCutTrackerOf(t, w, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/comments") {
			http.Error(rw, "bad gateway", http.StatusBadGateway)
			return
		}
		sim.ServeHTTP(rw, r)
	}))
}

// recordDeadRunsDone leaves ticket n as a dead run "ghost" (attempt 1)
// whose Done outcome o (its body, times and tries as given) waits in
// Redis.
func recordDeadRunsDone(t *testing.T, w *lifecycletest.World, n int, o runstate.Outcome) {
	t.Helper()
	deadRun(t, w, n, "ghost", 1)
	o.Ref, o.Token, o.Instance, o.Attempt, o.To, o.Outcome = lifecycletest.Ref(n), "ghost|webhook|0|tok", "ghost", 1, "done", "succeeded"
	if ok, err := runstate.PutOutcome(t.Context(), w.RDB, o.Token, o); err != nil || !ok {
		t.Fatalf("record: %v %v", ok, err)
	}
}
