package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/projects"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/receiver"
	"github.com/agentsmithd/agentsmithd/pkg/budget"
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

const (
	trigger       = "agent-smith"
	webhookSecret = "bench-secret"
)

// world is the daemon's composition driven piece by piece (the daemon
// package is internal to the main module): a trackersim over HTTP, the real
// GitHub tracker (go-github over pkg/trackerhttp) per repository, the queue,
// the claim service and a webhook receiver on a real listener.
type world struct {
	sim      *trackersim.Sim
	simSrv   *httptest.Server
	simNanos atomic.Int64 // time spent inside the sim's handler
	rdb      *redis.Client
	q        *queue.Queue
	projects lifecycle.Projects
	// consumer is the projects as a consumer on another replica sees
	// them: the same repositories through other tracker clients (so no
	// shared HTTP cache with the claim).
	consumer lifecycle.Projects
	claims   *claim.Service
	labels   lifecycle.Labels
	recv     *receiver.Receiver
	recvSrv  *httptest.Server
	workDir  string
}

type projectSpec struct {
	name, repo string
	command    []string
	webhook    bool
	// platform is the tracker's ("" is GitHub).
	platform string
	// jiraDC makes a Jira project a Data Center one (REST v2, a personal
	// access token as Bearer) instead of Cloud (REST v3, email + API token).
	jiraDC bool
	// githubAPI is a GitHub project's label write path (github.api): ""
	// REST, as github.New's default; the daemon's default is GraphQL.
	githubAPI string
}

func newWorld(rdb *redis.Client, specs ...projectSpec) (*world, error) {
	return newWorldClock(rdb, nil, specs...)
}

// newWorldClock is newWorld with the sim on clock (nil: time.Now), so a
// bench can let a rate-limit window pass without waiting for it.
func newWorldClock(rdb *redis.Client, clock func() time.Time, specs ...projectSpec) (*world, error) {
	s := trackersim.New(trackersim.Options{RateLimit: 1 << 30, PerPage: 100, Clock: clock})
	// Azure DevOps numbers work items per organisation (the bench's
	// Azure DevOps projects are acmeorg/rN).
	s.NumberWorkItemsPerOrganisation("acmeorg")
	w := &world{sim: s, rdb: rdb, q: queue.New(rdb, keys.Queue()),
		projects: lifecycle.Projects{}, consumer: lifecycle.Projects{}, labels: lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}}
	// The sim's own time, summed over its requests, so a figure can tell
	// the daemon's time from the emulator's.
	h := s.Handler()
	w.simSrv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		start := time.Now()
		h.ServeHTTP(rw, r)
		w.simNanos.Add(int64(time.Since(start)))
	}))
	routes := map[string]*receiver.Route{}
	var order []string
	for _, sp := range specs {
		s.CreateRepo(sp.repo)
		for _, ps := range []lifecycle.Projects{w.projects, w.consumer} {
			// As the daemon does: the default transport, with the token's
			// rate-limit budget shared through Redis (pkg/budget).
			hc := trackerhttp.NewClientWith(trackerhttp.Options{Writer: "bench", RateLimits: projects.RateLimits(sp.plat()), Budget: budget.New(rdb, clock)})
			tr, err := w.tracker(sp, hc)
			if err != nil {
				w.close()
				return nil, fmt.Errorf("%s tracker: %w", sp.plat(), err)
			}
			ps[sp.name] = &lifecycle.Project{Name: sp.name, Platform: sp.plat(), Tracker: tr, TriggerLabel: trigger,
				Pipeline: lifecycle.Pipeline{Command: sp.command, MaxAttempts: 1}}
		}
		// One secret per project: a secret authenticates only its project.
		r := routes[sp.plat()]
		if r == nil {
			r = &receiver.Route{Platform: sp.plat(), Decoder: decoders[sp.plat()]}
			routes[sp.plat()] = r
			order = append(order, sp.plat())
		}
		r.Projects = append(r.Projects, receiver.ProjectRoute{Name: sp.name, Locator: sp.locator(), Secrets: [][]byte{[]byte(webhookSecret + sp.name)}})
	}
	var rs []receiver.Route
	for _, p := range order {
		rs = append(rs, *routes[p])
	}
	w.claims = claim.NewService(rdb, w.q, w.projects, claim.Config{Instance: "bench", Labels: w.labels})
	w.recv = receiver.New(rdb, w.claims, rs, receiver.Config{})
	w.recvSrv = httptest.NewServer(w.recv.Handler())
	for _, sp := range specs {
		if sp.webhook {
			// Each platform's hook as its receiver authenticates it:
			// GitHub's and Jira's HMAC signature, GitLab's X-Gitlab-Token,
			// Azure DevOps' basic-auth password (trackersim's dialects).
			s.AddHook(trackersim.Hook{Repo: sp.repo, URL: w.recvSrv.URL + "/webhooks/" + sp.plat(), Secret: webhookSecret + sp.name,
				Dialect: hookDialects[sp.plat()]})
		}
	}
	dir, err := os.MkdirTemp("", "agentsmithd-bench-work-")
	if err != nil {
		w.close()
		return nil, err
	}
	w.workDir = dir
	return w, nil
}

func (w *world) close() {
	if w.recvSrv != nil {
		w.recvSrv.Close()
	}
	w.sim.Close()
	w.simSrv.Close()
	if w.workDir != "" {
		_ = os.RemoveAll(w.workDir)
	}
}

// executor builds the consumer; split gives it its own tracker clients, as
// on a replica that runs only the consumer role.
func (w *world) executor(concurrency int, split bool) *consumer.Executor {
	ps := w.projects
	if split {
		ps = w.consumer
	}
	return consumer.NewExecutor(w.rdb, w.q, ps, consumer.ExecutorConfig{Instance: "bench", Concurrency: concurrency,
		WorkDir: w.workDir, Labels: w.labels})
}

// decoders are the receiver's webhook decoders by platform, as the daemon
// routes /webhooks/<platform>.
var decoders = map[string]platforms.WebhookDecoder{github.Platform: github.Webhooks{}, gitlab.Platform: gitlab.Webhooks{},
	azuredevops.Platform: azuredevops.Webhooks{}, jira.Platform: jira.Webhooks{}}

// hookDialects are trackersim's webhook formats by platform.
var hookDialects = map[string]string{github.Platform: "", gitlab.Platform: "gitlab", azuredevops.Platform: "ado", jira.Platform: "jira"}

// locator is how sp's webhook deliveries name its project: Azure DevOps
// folds "org/project" to lower case, the others carry the repo as is.
func (sp projectSpec) locator() string {
	if sp.plat() == azuredevops.Platform {
		org, project, _ := strings.Cut(sp.repo, "/")
		return azuredevops.Locator(org, project)
	}
	return sp.repo
}

func (sp projectSpec) plat() string {
	if sp.platform == "" {
		return github.Platform
	}
	return sp.platform
}

// tracker builds sp's tracker against the sim, as internal/projects does
// for a configured project.
func (w *world) tracker(sp projectSpec, hc *http.Client) (platforms.Tracker, error) {
	switch sp.plat() {
	case gitlab.Platform:
		return gitlab.New(gitlab.Options{BaseURL: w.simSrv.URL + "/gitlab/api/v4/", Repo: sp.repo, Project: sp.name, Token: "t", HTTPClient: hc})
	case jira.Platform:
		o := jira.Options{BaseURL: w.simSrv.URL + "/jira/", Repo: sp.repo, Project: sp.name, Token: "t",
			Email: "bot@acme.example", Locker: redislock.Locker{RDB: w.rdb}, HTTPClient: hc}
		if sp.jiraDC {
			o.Email, o.Deployment = "", jira.DeploymentDataCenter
		}
		return jira.New(o)
	case azuredevops.Platform:
		return azuredevops.New(azuredevops.Options{BaseURL: w.simSrv.URL + "/ado/", Repo: sp.repo, Project: sp.name, Token: "t", HTTPClient: hc})
	}
	return github.New(github.Options{BaseURL: w.simSrv.URL + "/github/", Repo: sp.repo, Project: sp.name, Token: "t", HTTPClient: hc, API: sp.githubAPI})
}

// refOn is ticket n of sp as its platform spells the id.
func refOn(sp projectSpec, n int) platforms.Ref {
	switch sp.plat() {
	case gitlab.Platform:
		return platforms.Ref{Platform: gitlab.Platform, Project: sp.name, ID: gitlab.FormatID(sp.repo, n)}
	case jira.Platform:
		return platforms.Ref{Platform: jira.Platform, Project: sp.name, ID: jira.FormatID(sp.repo, n)}
	case azuredevops.Platform:
		return platforms.Ref{Platform: azuredevops.Platform, Project: sp.name, ID: azuredevops.FormatID(sp.repo, n)}
	}
	return ref(sp.name, sp.repo, n)
}

func ref(project, repo string, n int) platforms.Ref {
	return platforms.Ref{Platform: github.Platform, Project: project, ID: github.FormatID(repo, n)}
}

func (w *world) state(repo string, n int) lifecycle.State {
	is, ok := w.sim.Issue(repo, n)
	if !ok {
		return lifecycle.State(0)
	}
	return w.labels.StateOf(is.Labels)
}

// apiStats is a snapshot of the sim's counters.
type apiStats struct {
	calls map[string]int
	nm    int
}

func (w *world) apiSnap() apiStats {
	st := w.sim.Stats()
	c := make(map[string]int, len(st.Calls))
	for k, v := range st.Calls {
		c[k] = v
	}
	return apiStats{calls: c, nm: st.NotModified}
}

// apiDelta returns calls by kind since before, the total, and 304s.
func (w *world) apiDelta(before apiStats) (map[string]int, int, int) {
	now := w.apiSnap()
	d := map[string]int{}
	total := 0
	for k, v := range now.calls {
		if n := v - before.calls[k]; n > 0 {
			d[k] = n
			total += n
		}
	}
	return d, total, now.nm - before.nm
}

// shortKind turns "PATCH /repos/{owner}/{repo}/issues/{number}" into
// "PATCH issue", and drops the other platforms' API roots
// ("/gitlab/api/v4/projects/{id}", "/ado/{org}/{project}/_apis",
// "/jira/rest/api/{v}").
func shortKind(k string) string {
	method, path, _ := strings.Cut(k, " ")
	for _, root := range []string{"/repos/{owner}/{repo}", "/gitlab/api/v4/projects/{id}", "/gitlab/api/v4", "/ado/{org}/{project}/_apis",
		"/ado/{org}/_apis", "/jira/rest/api/{v}", "/jira"} {
		if p, ok := strings.CutPrefix(path, root); ok {
			path = p
			break
		}
	}
	switch path {
	case "/issues/{number}":
		path = "issue"
	case "/issues":
		path = "issues list"
	case "/issues/{number}/comments":
		path = "comments"
	}
	return method + " " + path
}

func kinds(d map[string]int, n float64) string { return perTicket(d, n, shortKind) }

var _ = http.StatusOK
var _ = context.Background
