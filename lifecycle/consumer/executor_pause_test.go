package consumer_test

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/github"
)

// A paused project's claimed ticket stays Enqueued with its one request
// put aside in the delayed set (not run, not re-pushed by the
// EnqueuedReconciler, attempt unchanged) while another project's tickets
// run; a resume runs it at once, long before the pause delay would have
// brought it back, exactly once.
func TestPauseAndResumeProject(t *testing.T) {
	w := lifecycletest.New(t, 3)
	ctx := t.Context()
	dir := t.TempDir()
	// A second project on another repository of the same sim.
	srv := httptest.NewServer(w.Sim.Handler())
	t.Cleanup(srv.Close)
	const otherRepo, other = "acme/other", "other"
	tr, err := github.New(github.Options{BaseURL: srv.URL + "/github/", Repo: otherRepo, Project: other, Token: "t", Writer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	op := *w.Projects[lifecycletest.Project]
	op.Name, op.Tracker = other, tr
	w.Projects[other] = &op
	for _, p := range w.Projects {
		p.Pipeline.Command = []string{"sh", "-c", `echo "$AGENTSMITH_TICKET_ID" >> "$D/runs"`}
	}
	// The default pause delay (30 s): only the resume can make the
	// request run within the test's deadlines.
	op.Pipeline.Env = map[string]string{"D": dir}
	consumertest.RunWorld(t, w, dir, 2)

	if err := lifecycle.PauseProject(ctx, w.RDB, lifecycletest.Project, "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	paused := w.ClaimIssue(t, "paused project's ticket")
	n := w.Sim.CreateIssue(otherRepo, "other project's ticket", "", "agent-smith")
	otherRef := platforms.Ref{Platform: github.Platform, Project: other, ID: github.FormatID(otherRepo, n)}
	if res, err := w.Claims.Claim(ctx, otherRef, lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim of the other project's ticket: %+v %v", res, err)
	}
	eventually.Wait(t, 20*time.Second, "the other project's ticket to run", func() bool {
		is, _ := w.Sim.Issue(otherRepo, n)
		return w.Labels.StateOf(is.Labels) == lifecycle.Done
	})
	eventually.Wait(t, 10*time.Second, "the paused project's request to be put aside", func() bool {
		d := w.Delayed(t)
		return len(d) == 1 && d[0].PausedAside
	})
	if s := w.State(t, paused); s != lifecycle.Enqueued {
		t.Fatalf("paused project's ticket is %s, want enqueued", s)
	}
	if d := w.Delayed(t)[0]; d.Ref != lifecycletest.Ref(paused) || d.Attempt != 1 {
		t.Errorf("put aside %+v, want ticket %d at attempt 1", d, paused)
	}
	// The reconciler counts the put-aside request as queued.
	rec := housekeeping.NewEnqueuedReconciler(w.RDB, w.Queue, w.Claims, housekeeping.EnqueuedReconcilerConfig{Grace: time.Nanosecond})
	for range 2 {
		if err := rec.SlowCycle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if q, d := w.Requests(t), w.Delayed(t); len(q)+len(d) != 1 {
		t.Fatalf("after reconciling: queue %+v, delayed %+v; want the one request", q, d)
	}
	if got := lifecycletest.Runs(t, dir); !slices.Equal(got, []string{otherRef.ID}) {
		t.Fatalf("runs %q while paused, want only the other project's", got)
	}
	ps, err := lifecycle.PausedProjects(ctx, w.RDB)
	if err != nil || len(ps) != 1 || ps[0].Project != lifecycletest.Project || ps[0].By != "test" {
		t.Fatalf("PausedProjects = %+v, %v", ps, err)
	}

	was, due, err := lifecycle.ResumeProject(ctx, w.RDB, lifecycletest.Project)
	if err != nil || !was || due != 1 {
		t.Fatalf("resume: paused %v, made %d due, %v; want true, 1", was, due, err)
	}
	eventually.Wait(t, 10*time.Second, "the resumed ticket to run", func() bool { return w.State(t, paused) == lifecycle.Done })
	got := lifecycletest.Runs(t, dir)
	slices.Sort(got)
	want := []string{lifecycletest.Ref(paused).ID, otherRef.ID}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("runs %q, want each ticket once", got)
	}
	if n, _ := w.RDB.Exists(ctx, keys.Paused(lifecycletest.Project)).Result(); n != 0 {
		t.Error("pause key left after resume")
	}
	if was, _, _ := lifecycle.ResumeProject(ctx, w.RDB, lifecycletest.Project); was {
		t.Error("second resume says the project was paused")
	}
}

// A cancel asked for a paused project's queued ticket is honoured without
// waiting for a resume, and nothing runs.
func TestCancelWhilePaused(t *testing.T) {
	w := lifecycletest.New(t, 3)
	ctx := t.Context()
	dir := t.TempDir()
	w.Projects[lifecycletest.Project].Pipeline.Command = []string{"sh", "-c", `echo run >> "$D/runs"`}
	consumertest.RunWorld(t, w, dir, 1)
	if err := lifecycle.PauseProject(ctx, w.RDB, lifecycletest.Project, "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	n := w.ClaimIssue(t, "cancel me while paused")
	eventually.Wait(t, 10*time.Second, "the request to be put aside", func() bool { return len(w.Delayed(t)) == 1 })
	if err := runstate.RequestCancel(ctx, w.RDB, lifecycletest.Ref(n), lifecycle.CtlCause("no"), 0); err != nil {
		t.Fatal(err)
	}
	// Bring the put-aside request back now instead of after the delay.
	if _, err := w.RDB.ZIncrBy(ctx, keys.Delayed(), -float64(time.Hour.Milliseconds()), w.RDB.ZRange(ctx, keys.Delayed(), 0, 0).Val()[0]).Result(); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 10*time.Second, "the ticket to fail", func() bool { return w.State(t, n) == lifecycle.Failed })
	if b, err := os.ReadFile(filepath.Join(dir, "runs")); err == nil {
		t.Errorf("a cancelled paused ticket ran: %q", b)
	}
	if cs := w.Comments(t, n); len(cs) != 1 || !strings.Contains(cs[0], "no") {
		t.Errorf("comments %q", cs)
	}
}
