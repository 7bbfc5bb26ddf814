package housekeeping

import (
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp/trackerhttptest"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

const (
	searchRoute = "GET /search/issues"
	listRoute   = "GET /repos/{owner}/{repo}/issues"
)

// orgWorld is several GitHub projects on one trackersim: name → repo, with
// the token each uses.
type orgWorld struct {
	sim    *trackersim.Sim
	claims *claim.Service
	stale  *StaleJobDetector
	labels lifecycle.Labels
}

type orgProject struct{ name, repo, token string }

func newOrgWorld(t *testing.T, clock *trackerhttptest.Clock, lag time.Duration, ps ...orgProject) *orgWorld {
	t.Helper()
	rdb := redistest.Start(t).Client(t)
	s := trackersim.New(trackersim.Options{Clock: clock.Now})
	t.Cleanup(s.Close)
	s.SetGitHubSearchLag(lag)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	projects := lifecycle.Projects{}
	for _, p := range ps {
		s.CreateRepo(p.repo)
		tr, err := github.New(github.Options{BaseURL: srv.URL + "/github/", Repo: p.repo, Project: p.name, Token: p.token, Writer: "test"})
		if err != nil {
			t.Fatal(err)
		}
		projects[p.name] = &lifecycle.Project{Name: p.name, Platform: github.Platform, Tracker: tr, TriggerLabel: "agent-smith",
			Pipeline: lifecycle.Pipeline{Command: []string{"true"}, MaxAttempts: 3}}
	}
	labels := lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}
	claims := claim.NewService(rdb, queue.New(rdb, keys.Queue()), projects,
		claim.Config{Instance: "test", Labels: labels, Logger: zaptest.NewLogger(t)})
	return &orgWorld{sim: s, claims: claims, labels: labels,
		stale: NewStaleJobDetector(rdb, claims, StaleJobDetectorConfig{Logger: zaptest.NewLogger(t)})}
}

func (w *orgWorld) state(t *testing.T, repo string, n int) lifecycle.State {
	t.Helper()
	is, ok := w.sim.Issue(repo, n)
	if !ok {
		t.Fatalf("issue %s#%d missing", repo, n)
	}
	return w.labels.StateOf(is.Labels)
}

// Three projects on one GitHub owner with one token are listed with one
// search; a project on another owner, and one on the same owner with
// another token (which may see other repositories and spends another
// budget), with a list call each. Every orphan is found, and a labelled
// issue in a repository no project configures is left alone.
func TestSlowCycleSearchesOncePerOwnerAndToken(t *testing.T) {
	w := newOrgWorld(t, trackerhttptest.NewClock(time.Now()), 0,
		orgProject{"a", "acme/a", "t"}, orgProject{"b", "acme/b", "t"}, orgProject{"c", "acme/c", "t"},
		orgProject{"d", "other/d", "t"}, orgProject{"e", "acme/e", "u"})
	inProgress := []string{"agent-smith", lifecycletest.Label(lifecycle.InProgress)}
	orphans := map[string]int{}
	for _, repo := range []string{"acme/a", "acme/c", "other/d", "acme/e"} {
		orphans[repo] = w.sim.CreateIssue(repo, "orphan", "", inProgress...)
	}
	foreign := w.sim.CreateIssue("acme/unconfigured", "not ours", "", inProgress...)
	before := w.sim.Stats()

	if err := w.stale.SlowCycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	for repo, n := range orphans {
		if s := w.state(t, repo, n); s != lifecycle.Enqueued {
			t.Errorf("%s#%d is %s, want reverted and claimed again (enqueued)", repo, n, s)
		}
	}
	if s := w.state(t, "acme/unconfigured", foreign); s != lifecycle.InProgress {
		t.Errorf("an issue of an unconfigured repository is %s, want untouched", s)
	}
	after := w.sim.Stats()
	if n := after.Calls[searchRoute] - before.Calls[searchRoute]; n != 1 {
		t.Errorf("%d searches, want 1 (acme/a, acme/b, acme/c share owner and token)", n)
	}
	if n := after.Calls[listRoute] - before.Calls[listRoute]; n != 2 {
		t.Errorf("%d repository list calls, want 2 (other/d, and acme/e with its own token)", n)
	}
}

// The search index lags: a hit whose labels are stale is read afresh before
// anything is written, and a freshly labelled issue the index does not show
// yet is found by the cycle after it does.
func TestSearchHitIsActedOnOnlyAfterAFreshRead(t *testing.T) {
	clock := trackerhttptest.NewClock(time.Now())
	w := newOrgWorld(t, clock, time.Hour, orgProject{"a", "acme/a", "t"}, orgProject{"b", "acme/b", "t"})
	// Indexed as in progress; a person finished it two hours later, which
	// the index, an hour behind, does not show yet.
	done := w.sim.CreateIssue("acme/a", "finished meanwhile", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
	clock.Advance(2 * time.Hour)
	if err := w.sim.EditLabel("acme/a", done, lifecycletest.Label(lifecycle.InProgress), false); err != nil {
		t.Fatal(err)
	}
	if err := w.sim.AddLabels("acme/a", done, lifecycletest.Label(lifecycle.Done)); err != nil {
		t.Fatal(err)
	}
	// Labelled in progress and orphaned just now: not in the index yet.
	fresh := w.sim.CreateIssue("acme/b", "orphan", "", "agent-smith", lifecycletest.Label(lifecycle.InProgress))
	writes := len(w.sim.Writes())

	if err := w.stale.SlowCycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s := w.state(t, "acme/a", done); s != lifecycle.Done {
		t.Errorf("stale hit is %s, want done: it must be read afresh, not reverted from the search's labels", s)
	}
	if got := w.sim.Writes()[writes:]; len(got) != 0 {
		t.Errorf("writes after a stale search hit: %+v, want none", got)
	}
	if got := w.sim.Stats().Calls[searchRoute]; got != 1 {
		t.Errorf("%d searches, want 1 (two projects on acme share it)", got)
	}
	if got := w.sim.Stats().Calls["GET /repos/{owner}/{repo}/issues/{number}"]; got != 1 {
		t.Errorf("%d issue reads, want 1: the stale hit read afresh", got)
	}
	if s := w.state(t, "acme/b", fresh); s != lifecycle.InProgress {
		t.Errorf("an issue the index does not show yet is %s, want untouched this cycle", s)
	}

	w.sim.SetGitHubSearchLag(0) // the index caught up
	if err := w.stale.SlowCycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s := w.state(t, "acme/b", fresh); s != lifecycle.Enqueued {
		t.Errorf("once indexed, the orphan is %s, want reverted and claimed again (enqueued)", s)
	}
}

// The TriggerSweeper lists the triggered tickets of projects sharing an
// owner and token with one search, and claims each (the claim reads it
// afresh): a finished ticket and one of an unconfigured repository are
// left alone.
func TestTriggerSweeperSearchesOncePerOwner(t *testing.T) {
	w := newOrgWorld(t, trackerhttptest.NewClock(time.Now()), 0,
		orgProject{"a", "acme/a", "t"}, orgProject{"b", "acme/b", "t"}, orgProject{"c", "acme/c", "t"})
	missedA := w.sim.CreateIssue("acme/a", "webhook refused", "", "agent-smith")
	missedB := w.sim.CreateIssue("acme/b", "webhook refused", "", "agent-smith")
	done := w.sim.CreateIssue("acme/c", "finished", "", "agent-smith", lifecycletest.Label(lifecycle.Done))
	foreign := w.sim.CreateIssue("acme/unconfigured", "not ours", "", "agent-smith")
	s := NewTriggerSweeper(w.claims, TriggerSweeperConfig{})
	if err := s.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		repo string
		n    int
		want lifecycle.State
	}{{"acme/a", missedA, lifecycle.Enqueued}, {"acme/b", missedB, lifecycle.Enqueued},
		{"acme/c", done, lifecycle.Done}, {"acme/unconfigured", foreign, lifecycle.Pending}} {
		if got := w.state(t, c.repo, c.n); got != c.want {
			t.Errorf("%s#%d is %s, want %s", c.repo, c.n, got, c.want)
		}
	}
	st := w.sim.Stats()
	if st.Calls[searchRoute] != 1 || st.Calls[listRoute] != 0 {
		t.Errorf("%d searches and %d repository lists, want 1 and 0", st.Calls[searchRoute], st.Calls[listRoute])
	}
}
