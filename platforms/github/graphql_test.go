package github_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	gh "github.com/google/go-github/v60/github"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// countingTransport counts the requests a tracker sends, by method and path.
type countingTransport struct {
	next http.RoundTripper
	mu   sync.Mutex
	sent []string
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.sent = append(c.sent, req.Method+" "+req.URL.Path)
	c.mu.Unlock()
	return c.next.RoundTrip(req)
}

// during returns the requests f sent.
func (c *countingTransport) during(f func()) []string {
	c.mu.Lock()
	from := len(c.sent)
	c.mu.Unlock()
	f()
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sent[from:])
}

type graphqlWorld struct {
	sim   *trackersim.Sim
	url   string
	count *countingTransport
	rest  *gh.Client // reads /rate_limit, which costs nothing
}

func newGraphQLWorld(t *testing.T, opts trackersim.Options) *graphqlWorld {
	t.Helper()
	opts.Tokens = []string{simToken}
	s := trackersim.New(opts)
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	rest := gh.NewClient(nil).WithAuthToken(simToken)
	rest.BaseURL.Scheme, rest.BaseURL.Host, rest.BaseURL.Path = "http", srv.Listener.Addr().String(), "/github/"
	return &graphqlWorld{sim: s, url: srv.URL + "/github/", rest: rest}
}

// tracker is a GraphQL-path tracker over a counting transport under the
// daemon's rate-limit transport.
func (w *graphqlWorld) tracker(t *testing.T) *github.Tracker {
	t.Helper()
	w.count = &countingTransport{next: http.DefaultTransport.(*http.Transport).Clone()}
	hc := &http.Client{Transport: trackerhttp.NewTransport(w.count, trackerhttp.Options{RateLimits: trackerhttp.GitHubRateLimits, CacheEntries: -1})}
	tr, err := github.New(github.Options{BaseURL: w.url, Repo: "acme/app", Project: "p", Token: simToken, HTTPClient: hc, API: github.APIGraphQL,
		Spellings: []string{"agent-smith", "agent-smith:pending", "agent-smith:enqueued", "agent-smith:in-progress", "agent-smith:done", "agent-smith:failed"}})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// budgets are the core and graphql budgets used so far.
func (w *graphqlWorld) budgets(t *testing.T) (core, graphql int) {
	t.Helper()
	rl, _, err := w.rest.RateLimit.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rl.Core.Limit - rl.Core.Remaining, rl.GraphQL.Limit - rl.GraphQL.Remaining
}

func ref(repo string, n int) platforms.Ref {
	return platforms.Ref{Platform: github.Platform, Project: "p", ID: github.FormatID(repo, n)}
}

// A transition is one GraphQL request, charged to GraphQL's budget and
// not to REST's, once the issue's and labels' node ids are known; the
// first, with none known, adds one query for them.
func TestGraphQLTransitionIsOneRequest(t *testing.T) {
	w := newGraphQLWorld(t, trackersim.Options{})
	n := w.sim.CreateIssue("acme/app", "t", "", "agent-smith", "agent-smith:pending", "keep")
	for _, l := range []string{"agent-smith:enqueued", "agent-smith:in-progress", "agent-smith:done"} {
		if err := w.sim.CreateLabel("acme/app", l); err != nil {
			t.Fatal(err)
		}
	}
	tr := w.tracker(t)
	ctx := context.Background()
	tk, err := tr.Get(ctx, ref("acme/app", n)) // the claim's read; it carries the issue's node id
	if err != nil {
		t.Fatal(err)
	}
	steps := []string{"agent-smith:pending", "agent-smith:enqueued", "agent-smith:in-progress", "agent-smith:done"}
	for i := 1; i < len(steps); i++ {
		core0, gql0 := w.budgets(t)
		sent := w.count.during(func() {
			if tk, err = tr.Relabel(ctx, tk, []string{steps[i-1]}, steps[i]); err != nil {
				t.Fatalf("%s → %s: %v", steps[i-1], steps[i], err)
			}
		})
		core1, gql1 := w.budgets(t)
		want := []string{"POST /github/graphql"}
		if i == 1 {
			want = append(want, want[0]) // label node ids learned once
		}
		if !slices.Equal(sent, want) {
			t.Errorf("%s → %s sent %q, want %q", steps[i-1], steps[i], sent, want)
		}
		if core1 != core0 || gql1-gql0 != len(want) {
			t.Errorf("%s → %s: core %d → %d, graphql %d → %d; want core untouched, graphql +%d", steps[i-1], steps[i], core0, core1, gql0, gql1, len(want))
		}
		if want := []string{"agent-smith", "keep", steps[i]}; !slices.Equal(tk.Labels, want) {
			t.Errorf("returned labels %q, want %q", tk.Labels, want)
		}
	}
	if got, _ := w.sim.Issue("acme/app", n); !slices.Equal(got.Labels, []string{"agent-smith", "keep", "agent-smith:done"}) {
		t.Errorf("labels on the issue %q", got.Labels)
	}
}

// A label the repository lacks is created through REST, once: the next
// ticket's same transition is one GraphQL request again.
func TestGraphQLCreatesAMissingLabelOnce(t *testing.T) {
	w := newGraphQLWorld(t, trackersim.Options{})
	tr := w.tracker(t)
	ctx := context.Background()
	for i, want := range [][]string{
		{"POST /github/graphql", "POST /github/repos/acme/app/labels", "POST /github/graphql"},
		{"POST /github/graphql"},
	} {
		n := w.sim.CreateIssue("acme/app", "t", "", "agent-smith", "agent-smith:pending")
		tk, err := tr.Get(ctx, ref("acme/app", n))
		if err != nil {
			t.Fatal(err)
		}
		sent := w.count.during(func() {
			if _, err := tr.Relabel(ctx, tk, []string{"agent-smith:pending"}, "agent-smith:enqueued"); err != nil {
				t.Fatal(err)
			}
		})
		if !slices.Equal(sent, want) {
			t.Errorf("ticket %d sent %q, want %q", i+1, sent, want)
		}
		if got, _ := w.sim.Issue("acme/app", n); !slices.Equal(got.Labels, []string{"agent-smith", "agent-smith:enqueued"}) {
			t.Errorf("ticket %d labels %q", i+1, got.Labels)
		}
	}
}

// A lifecycle label another writer added before the transition's add is
// the lost race, as on REST: ErrPreconditionFailed, the removed label put
// back and the added one taken back, the other writer's kept.
func TestGraphQLForeignLifecycleLabelUndoesTheWrite(t *testing.T) {
	w := newGraphQLWorld(t, trackersim.Options{})
	n := w.sim.CreateIssue("acme/app", "t", "", "agent-smith", "agent-smith:pending", "agent-smith:enqueued", "agent-smith:done")
	tr := w.tracker(t)
	ctx := context.Background()
	// Warm the node ids so the race lands on the mutation.
	tk, err := tr.Get(ctx, ref("acme/app", n))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Relabel(ctx, tk, []string{"agent-smith:enqueued", "agent-smith:done"}, ""); err != nil {
		t.Fatal(err)
	}
	if tk, err = tr.Get(ctx, ref("acme/app", n)); err != nil {
		t.Fatal(err)
	}
	w.sim.BeforeAPIWrite("acme/app", n, 0, func() { _ = w.sim.EditLabel("acme/app", n, "agent-smith:failed", true) })
	_, err = tr.Relabel(ctx, tk, []string{"agent-smith:pending"}, "agent-smith:enqueued")
	if !errors.Is(err, platforms.ErrPreconditionFailed) {
		t.Fatalf("Relabel = %v, want ErrPreconditionFailed", err)
	}
	got, _ := w.sim.Issue("acme/app", n)
	if want := []string{"agent-smith", "agent-smith:failed", "agent-smith:pending"}; !slices.Equal(got.Labels, want) {
		t.Errorf("labels %q, want %q (the other writer's kept, ours undone)", got.Labels, want)
	}
}

// GraphQL answering an error REST would not have (its own budget spent:
// HTTP 200 with RATE_LIMITED, or held by the transport after an answer
// said none remain) writes the transition through REST instead.
func TestGraphQLErrorFallsBackToREST(t *testing.T) {
	w := newGraphQLWorld(t, trackersim.Options{GraphQLRateLimit: 2})
	n := w.sim.CreateIssue("acme/app", "t", "", "agent-smith", "agent-smith:pending")
	ctx := context.Background()
	a := w.tracker(t)
	countA := w.count
	tk, err := a.Get(ctx, ref("acme/app", n))
	if err != nil {
		t.Fatal(err)
	}
	if _, err = a.Relabel(ctx, tk, []string{"agent-smith:pending"}, "agent-smith:enqueued"); err != nil {
		t.Fatal(err) // the query and the mutation: both points spent
	}

	// Another process's tracker sends and is answered RATE_LIMITED.
	b := w.tracker(t)
	tkb, err := b.Get(ctx, ref("acme/app", n))
	if err != nil {
		t.Fatal(err)
	}
	sent := w.count.during(func() {
		if tkb, err = b.Relabel(ctx, tkb, []string{"agent-smith:enqueued"}, "agent-smith:in-progress"); err != nil {
			t.Fatalf("enqueued → in-progress: %v", err)
		}
	})
	if want := []string{"POST /github/graphql", "POST /github/repos/acme/app/issues/1/labels", "DELETE /github/repos/acme/app/issues/1/labels/agent-smith:enqueued"}; !slices.Equal(sent, want) {
		t.Errorf("sent %q, want %q", sent, want)
	}
	if got, _ := w.sim.Issue("acme/app", n); !slices.Equal(got.Labels, []string{"agent-smith", "agent-smith:in-progress"}) {
		t.Errorf("labels %q", got.Labels)
	}

	// The first tracker's transport saw "0 remaining" on its last GraphQL
	// answer and holds GraphQL requests until the reset: REST writes.
	w.count = countA
	if tk, err = a.Get(ctx, ref("acme/app", n)); err != nil {
		t.Fatal(err)
	}
	sent = w.count.during(func() {
		if _, err = a.Relabel(ctx, tk, []string{"agent-smith:in-progress"}, "agent-smith:done"); err != nil {
			t.Fatalf("in-progress → done: %v", err)
		}
	})
	if want := []string{"POST /github/repos/acme/app/issues/1/labels", "DELETE /github/repos/acme/app/issues/1/labels/agent-smith:in-progress"}; !slices.Equal(sent, want) {
		t.Errorf("held: sent %q, want %q", sent, want)
	}
	if got, _ := w.sim.Issue("acme/app", n); !slices.Equal(got.Labels, []string{"agent-smith", "agent-smith:done"}) {
		t.Errorf("labels %q", got.Labels)
	}
}

// A mutation refused by the content creation limit, which REST shares, is
// ErrRateLimited: no REST write is attempted while the limit lasts. The
// sim counts label mutations as content (GitHubLabelsAsContent), as
// GitHub does for a token that needs github.pace_labels_as_content.
func TestGraphQLContentLimitIsNoFallback(t *testing.T) {
	w := newGraphQLWorld(t, trackersim.Options{GitHubSecondaryLimits: true, GitHubLabelsAsContent: true})
	n := w.sim.CreateIssue("acme/app", "t", "", "agent-smith", "agent-smith:pending")
	for _, l := range []string{"agent-smith:enqueued", "agent-smith:in-progress"} {
		if err := w.sim.CreateLabel("acme/app", l); err != nil {
			t.Fatal(err)
		}
	}
	tr := w.tracker(t)
	ctx := context.Background()
	tk, err := tr.Get(ctx, ref("acme/app", n))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Relabel(ctx, tk, []string{"agent-smith:pending"}, "agent-smith:enqueued"); err != nil {
		t.Fatal(err) // learns the node ids
	}
	if tk, err = tr.Get(ctx, ref("acme/app", n)); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ { // spend the minute's content creations as another writer with the same token
		if _, _, err := w.rest.Issues.CreateComment(ctx, "acme", "app", n, &gh.IssueComment{Body: gh.String("c")}); err != nil {
			break
		}
		if i > 100 {
			t.Fatal("the content limit never refused")
		}
	}
	sent := w.count.during(func() {
		_, err = tr.Relabel(ctx, tk, []string{"agent-smith:enqueued"}, "agent-smith:in-progress")
	})
	if !errors.Is(err, trackerhttp.ErrRateLimited) {
		t.Errorf("Relabel over the content limit = %v, want ErrRateLimited", err)
	}
	if want := []string{"POST /github/graphql"}; !slices.Equal(sent, want) {
		t.Errorf("sent %q, want %q (no REST retry)", sent, want)
	}
}

// A lifecycle label renamed after its node id was cached keeps the id
// (GitHub's "Update a label"), so the id adds the renamed label: the
// transition notices its label missing from the answer, takes the renamed
// one back and writes through REST, by name.
func TestGraphQLRenamedLabelFallsBackToREST(t *testing.T) {
	w := newGraphQLWorld(t, trackersim.Options{})
	n := w.sim.CreateIssue("acme/app", "t", "", "agent-smith", "agent-smith:pending")
	for _, l := range []string{"agent-smith:enqueued", "agent-smith:in-progress", "agent-smith:done"} {
		if err := w.sim.CreateLabel("acme/app", l); err != nil {
			t.Fatal(err)
		}
	}
	tr := w.tracker(t)
	ctx := context.Background()
	tk, err := tr.Get(ctx, ref("acme/app", n))
	if err != nil {
		t.Fatal(err)
	}
	if tk, err = tr.Relabel(ctx, tk, []string{"agent-smith:pending"}, "agent-smith:in-progress"); err != nil {
		t.Fatal(err) // learns every lifecycle label's node id
	}
	if _, _, err := w.rest.Issues.EditLabel(ctx, "acme", "app", "agent-smith:done", &gh.Label{Name: gh.String("shipped")}); err != nil {
		t.Fatal(err)
	}
	sent := w.count.during(func() {
		if tk, err = tr.Relabel(ctx, tk, []string{"agent-smith:in-progress"}, "agent-smith:done"); err != nil {
			t.Fatalf("in-progress → done: %v", err)
		}
	})
	want := []string{"agent-smith", "agent-smith:done"}
	if got, _ := w.sim.Issue("acme/app", n); !slices.Equal(got.Labels, want) {
		t.Errorf("labels on the issue %q, want %q (sent %q)", got.Labels, want, sent)
	}
	if !slices.Equal(tk.Labels, want) {
		t.Errorf("returned labels %q, want %q", tk.Labels, want)
	}
	// The cached ids were forgotten: the next ticket's transition learns
	// them again and adds the label by its own id.
	m := w.sim.CreateIssue("acme/app", "t", "", "agent-smith", "agent-smith:in-progress")
	if tk, err = tr.Get(ctx, ref("acme/app", m)); err != nil {
		t.Fatal(err)
	}
	if _, err = tr.Relabel(ctx, tk, []string{"agent-smith:in-progress"}, "agent-smith:done"); err != nil {
		t.Fatal(err)
	}
	if got, _ := w.sim.Issue("acme/app", m); !slices.Equal(got.Labels, want) {
		t.Errorf("next ticket's labels %q, want %q", got.Labels, want)
	}
}
