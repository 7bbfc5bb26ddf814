package lifecycle_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/projects"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/receiver"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/azuredevops"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/platforms/gitlab"
	"github.com/agentsmithd/agentsmithd/platforms/jira"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// webhookDoneBudgets are the rate-limited tracker calls one webhook →
// Done ticket spends on each platform, as bench/results.md section 2
// measures them (go run . -only lifecycle in bench/) and section 8 turns
// into tickets per hour per token. A change that spends more fails
// TestWebhookDoneCallBudget; one that spends fewer should lower the figure
// here and in the bench's tables.
var webhookDoneBudgets = []budgetCase{
	{"github", github.Platform, "/github/", "", "acme/app", "", 7, ""},
	{"github-graphql", github.Platform, "/github/", "", "acme/app", "", 4, github.APIGraphQL},
	{"gitlab", gitlab.Platform, "/gitlab/api/v4/", "", "acme/app", "gitlab", 4, ""},
	{"azuredevops", azuredevops.Platform, "/ado/", "", "acmeorg/app", "ado", 4, ""},
	{"jira-cloud", jira.Platform, "/jira/", jira.DeploymentCloud, "APP", "jira", 4, ""},
	// Data Center's edit answers 204 without the issue: the consumer reads
	// the ticket at its take (platforms/jira.Tracker.AnswersWhole).
	{"jira-dc", jira.Platform, "/jira/", jira.DeploymentDataCenter, "APP", "jira", 5, ""},
}

// wireCounter counts the requests that reach the tracker under the
// trackerhttp transport (its rate-limit and budget logic above it), by
// "METHOD path" and apart for 304s, which no platform's budget charges
// (GitHub's docs say so; the others ignore conditional requests). A
// request is counted when it is sent, so one whose effect the test can
// see on the sim is already in the count.
type wireCounter struct {
	next http.RoundTripper
	mu   sync.Mutex
	gen  int // bumped by reset
	// calls are the rate-limited requests (not 304) by kind.
	calls       map[string]int
	notModified int
}

func (c *wireCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	kind := req.Method + " " + req.URL.Path
	c.mu.Lock()
	gen := c.gen
	c.calls[kind]++
	c.mu.Unlock()
	resp, err := c.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusNotModified {
		c.mu.Lock()
		if c.gen == gen {
			c.calls[kind]--
			c.notModified++
		}
		c.mu.Unlock()
	}
	return resp, err
}

// reset starts a new count and returns the old one.
func (c *wireCounter) reset() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls, nm := c.calls, c.notModified
	c.calls, c.notModified = map[string]int{}, 0
	c.gen++
	return calls, nm
}

// A ticket labelled on the tracker, delivered by webhook (signed or
// authenticated as each receiver requires), claimed, run (`true`) and
// marked Done spends at most the rate-limited calls bench section 2
// measured, on every platform. The count is of requests on the wire under
// the daemon's own transport (a transport's retry counts twice), after one
// warm-up ticket, as the bench excludes warm-up.
func TestWebhookDoneCallBudget(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	for _, c := range webhookDoneBudgets {
		t.Run(c.name, func(t *testing.T) {
			r := newBudgetRig(t, rdb, c.name, []string{"true"})
			r.startExecutor()
			warm := r.s.CreateIssue(r.c.repo, "warm-up", "")
			n := r.s.CreateIssue(r.c.repo, "counted", "")
			if err := r.s.WaitIdle(t.Context()); err != nil {
				t.Fatal(err)
			}
			r.done(warm)
			r.wire.reset()
			r.done(n)
			// The executor's and the receiver's last calls are in once both
			// have stopped.
			r.stop()
			calls, nm := r.wire.reset()
			total := 0
			var kinds []string
			for k, v := range calls {
				if v == 0 {
					continue
				}
				total += v
				kinds = append(kinds, fmt.Sprintf("%s ×%d", k, v))
			}
			sort.Strings(kinds)
			t.Logf("%s webhook → Done: %d rate-limited calls (%s), %d 304s", c.name, total, strings.Join(kinds, ", "), nm)
			if total == 0 {
				t.Fatal("no tracker call went through the counted transport")
			}
			if total > c.calls {
				t.Errorf("webhook → Done spent %d rate-limited calls, more than the %d bench/results.md section 2 states: %s",
					total, c.calls, strings.Join(kinds, ", "))
			}
		})
	}
}

// budgetRig is one platform's daemon parts (claim service, receiver,
// executor) against trackersim over HTTP, every tracker call counted.
type budgetRig struct {
	t      *testing.T
	c      budgetCase
	rdb    *redis.Client
	s      *trackersim.Sim
	wire   *wireCounter
	labels lifecycle.Labels
	ex     *consumer.Executor
	rc     *receiver.Receiver
	stop   func()
}

type budgetCase = struct {
	name, platform string
	// api is the platform's API root on trackersim; deployment Jira's.
	api, deployment string
	repo            string
	// dialect is trackersim's webhook format of the platform.
	dialect string
	calls   int
	// writeAPI is GitHub's label write path (github.api), "" the default.
	writeAPI string
}

func newBudgetRig(t *testing.T, rdb *redis.Client, name string, command []string) *budgetRig {
	t.Helper()
	i := slices.IndexFunc(webhookDoneBudgets, func(c budgetCase) bool { return c.name == name })
	if i < 0 {
		t.Fatalf("no budget case %q", name)
	}
	c := webhookDoneBudgets[i]
	if err := rdb.FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	labels := lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}
	s := trackersim.New(trackersim.Options{})
	t.Cleanup(s.Close)
	if c.deployment == jira.DeploymentDataCenter {
		s.SetJiraDeployment(trackersim.JiraDataCenter)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	s.CreateRepo(c.repo)
	wire := &wireCounter{next: http.DefaultTransport, calls: map[string]int{}}
	hc := &http.Client{Transport: trackerhttp.NewTransport(wire, trackerhttp.Options{Writer: "test",
		RateLimits: projects.RateLimits(c.platform)}), Timeout: trackerhttp.ClientTimeout, CheckRedirect: trackerhttp.CheckRedirect}
	// The tracker, decoder and locator as internal/projects builds
	// them from a project's config.
	d, _ := platforms.Lookup(c.platform)
	var lifecycleLabels []string
	for _, st := range lifecycle.AllStates {
		lifecycleLabels = append(lifecycleLabels, labels.Label(st))
	}
	email := ""
	if c.deployment == jira.DeploymentCloud {
		email = "bot@example.com"
	}
	tr, decoder, locator, err := d.New(platforms.TrackerOptions{BaseURL: srv.URL + c.api, Repo: c.repo, Project: "p", Token: "t",
		Email: email, Deployment: c.deployment, API: c.writeAPI, HTTPClient: hc, Logger: zaptest.NewLogger(t), LabelPrefix: labels.Prefix,
		Spellings: append([]string{"agent-smith"}, lifecycleLabels...), Lifecycle: lifecycleLabels, Locker: redislock.Locker{RDB: rdb}})
	if err != nil {
		t.Fatal(err)
	}
	ps := lifecycle.Projects{"p": {Name: "p", Platform: c.platform, Tracker: tr, TriggerLabel: "agent-smith",
		Pipeline: lifecycle.Pipeline{Command: command, MaxAttempts: 1}}}
	q := queue.New(rdb, keys.Queue())
	claims := claim.NewService(rdb, q, ps, claim.Config{Instance: "test", Labels: labels, Logger: zaptest.NewLogger(t)})
	const secret = "budget-secret"
	rc := receiver.New(rdb, claims, []receiver.Route{{Platform: c.platform, Decoder: decoder, FoldLocator: d.FoldLocator,
		Projects: []receiver.ProjectRoute{{Name: "p", Locator: locator, Secrets: [][]byte{[]byte(secret)}}}}},
		receiver.Config{Logger: zaptest.NewLogger(t)})
	recv := httptest.NewServer(rc.Handler())
	t.Cleanup(recv.Close)
	s.AddHook(trackersim.Hook{Repo: c.repo, URL: recv.URL + "/webhooks/" + c.platform, Secret: secret, Dialect: c.dialect})
	ex := consumer.NewExecutor(rdb, q, ps, consumer.ExecutorConfig{Instance: "test", Concurrency: 1,
		WorkDir: t.TempDir(), Labels: labels, TakeWait: 100 * time.Millisecond, Logger: zaptest.NewLogger(t)})
	r := &budgetRig{t: t, c: c, rdb: rdb, s: s, wire: wire, labels: labels, ex: ex, rc: rc}
	r.stop = func() { rc.Wait() }
	t.Cleanup(func() { r.stop() })
	return r
}

// startExecutor runs the executor until the rig stops.
func (r *budgetRig) startExecutor() {
	ctx, cancel := context.WithCancel(context.Background())
	exDone := make(chan struct{})
	go func() { defer close(exDone); _ = r.ex.Run(ctx) }()
	r.stop = sync.OnceFunc(func() { cancel(); <-exDone; r.rc.Wait() })
}

// waitState waits until ticket n shows state's label and no other
// lifecycle label, and the deliveries about it are handled.
func (r *budgetRig) waitState(n int, state lifecycle.State) {
	t := r.t
	t.Helper()
	eventually.Wait(t, 20*time.Second, fmt.Sprintf("ticket %d %s with no other lifecycle label", n, state), func() bool {
		is, _ := r.s.Issue(r.c.repo, n)
		return slices.Contains(is.Labels, r.labels.Label(state)) &&
			!slices.ContainsFunc(is.Labels, func(l string) bool { return r.labels.IsLifecycle(l) && l != r.labels.Label(state) })
	})
	// The deliveries about the daemon's own writes, and what the
	// receiver does with them, belong to this ticket.
	if err := r.s.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// done triggers ticket n and waits for it to be Done.
func (r *budgetRig) done(n int) {
	r.t.Helper()
	if err := r.s.AddLabels(r.c.repo, n, "agent-smith"); err != nil {
		r.t.Fatal(err)
	}
	r.waitState(n, lifecycle.Done)
}
