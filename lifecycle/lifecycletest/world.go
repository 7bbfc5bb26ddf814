// Package lifecycletest starts what a lifecycle test needs in one call: a
// real redis-server, a trackersim over HTTP, the real GitHub tracker on it,
// the queue and a claim service, with cleanup registered on the test.
package lifecycletest

import (
	"net/http/httptest"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// Repo is the world's one repository; Project its config name.
const (
	Repo    = "acme/app"
	Project = "app"
)

// The world's queue has these levels besides lifecycle.DefaultPriority,
// and its project maps the labels "priority:high" and "priority:low" to them.
const (
	HighPriority = 1
	LowPriority  = 10
)

// World is one test's Redis, sim and lifecycle services.
type World struct {
	Redis    *redistest.Server
	RDB      *redis.Client
	Sim      *trackersim.Sim
	Queue    *queue.Queue
	Claims   *claim.Service
	Projects lifecycle.Projects
	Labels   lifecycle.Labels
}

// New starts a world. maxAttempts configures the project.
func New(t testing.TB, maxAttempts int) *World {
	t.Helper()
	r := redistest.Start(t)
	rdb := r.Client(t)
	s := trackersim.New(trackersim.Options{})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	tr, err := github.New(github.Options{BaseURL: srv.URL + "/github/", Repo: Repo, Project: Project, Token: "t", Writer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	q := QueueOn(rdb)
	projects := lifecycle.Projects{Project: {Name: Project, Platform: github.Platform, Tracker: tr, TriggerLabel: "agent-smith",
		Pipeline: lifecycle.Pipeline{Command: []string{"true"}, MaxAttempts: maxAttempts},
		Priority: lifecycle.PriorityPolicy{Labels: map[string]int{"priority:high": HighPriority, "priority:low": LowPriority}}}}
	labels := lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}
	claims := claim.NewService(rdb, q, projects, claim.Config{Instance: "test", Labels: labels, Logger: zaptest.NewLogger(t)})
	return &World{Redis: r, RDB: rdb, Sim: s, Queue: q, Claims: claims, Projects: projects, Labels: labels}
}

// QueueOn is the world's queue over rdb: a test gives an executor its own
// client (with hooks) and the queue on it.
func QueueOn(rdb *redis.Client) *queue.Queue {
	return queue.NewWith(rdb, keys.Queue(), queue.Options{DefaultPriority: lifecycle.DefaultPriority, DelayedKey: keys.Delayed(),
		Levels: []queue.Level{{Priority: HighPriority, Key: keys.QueueLevel(HighPriority)}, {Priority: LowPriority, Key: keys.QueueLevel(LowPriority)}}})
}

// Ref names issue n of the world's repository.
func Ref(n int) platforms.Ref {
	return platforms.Ref{Platform: github.Platform, Project: Project, ID: github.FormatID(Repo, n)}
}

// State is issue n's lifecycle state on the sim.
func (w *World) State(t testing.TB, n int) lifecycle.State {
	t.Helper()
	is, ok := w.Sim.Issue(Repo, n)
	if !ok {
		t.Fatalf("issue %d missing", n)
	}
	return w.Labels.StateOf(is.Labels)
}

// Delayed decodes the delayed set's entries, earliest due first.
func (w *World) Delayed(t testing.TB) []lifecycle.PipelineRequest {
	t.Helper()
	entries, err := w.Queue.DelayedEntries(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out []lifecycle.PipelineRequest
	for _, e := range entries {
		r, err := lifecycle.DecodeRequest(e.Payload)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// Requests decodes the queue's entries.
func (w *World) Requests(t testing.TB) []lifecycle.PipelineRequest {
	t.Helper()
	entries, err := w.Queue.Entries(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out []lifecycle.PipelineRequest
	for _, e := range entries {
		r, err := lifecycle.DecodeRequest(e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// GitHubLabelWrite is the sim's name of GitHub's add-labels call, the
// first write of a relabel: what a test counts to see a label write tried.
const GitHubLabelWrite = "POST /repos/{owner}/{repo}/issues/{number}/labels"

// RefusedIssue opens the repository's first issue, with the trigger label,
// on a sim that refuses its label writes for good (sim.RefuseLabelWrites:
// GitHub's 403), and returns its number.
func (w *World) RefusedIssue(t testing.TB) int {
	t.Helper()
	const n = 1
	w.Sim.CreateRepo(Repo)
	w.Sim.RefuseLabelWrites(Repo, n, true)
	if got := w.Sim.CreateIssue(Repo, "refused", "", "agent-smith"); got != n {
		t.Fatalf("issue %d, want %d: RefusedIssue must open the repository's first issue", got, n)
	}
	return n
}
