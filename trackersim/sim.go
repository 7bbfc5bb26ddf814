// Package sim is trackersim's engine: an in-memory issue tracker served over
// real HTTP in the four REST dialects the daemon's SDKs speak (GitHub,
// GitLab, Azure DevOps Boards, Jira Cloud and Data Center), so the real
// clients (go-github, go-gitlab, azure-devops-go-api, go-jira) run
// unchanged against it in tests, in the offline demo, in the chaos run and
// on a developer's machine.
//
// One store (store.go) holds repositories, issues with labels, comments,
// blocker links and reactions, a version counter per issue and a log of
// label writes (Writes; each names its writer, see Write.Writer). Each
// dialect translates HTTP to store calls and back in its own files
// (github*.go, gitlab*.go, ado*.go, jira*.go: endpoints, JSON shapes,
// webhooks, the endpoints `agentsmithd check` reads), so a label written
// through one dialect is seen by all; dialect.go says how a dialect plugs
// in. Where a dialect reproduces a tracker's documented or observed
// behaviour, its comment cites the source. Faults (latency, 502s, 429s,
// dropped or duplicated webhook deliveries) are injected on demand with a
// seeded generator so a failing test replays identically.
//
// The Go API (CreateIssue, AddLabels, …), the control API under /sim/ and
// the page at / act as a human user: their changes fire webhooks like a
// person clicking in the tracker's UI would.
package trackersim

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Defaults taken from GitHub's documented behaviour.
const (
	// DefaultPerPage is GitHub's page size when per_page is absent
	// (https://docs.github.com/en/rest/using-the-rest-api/using-pagination-in-the-rest-api).
	DefaultPerPage = 30
	// MaxPerPage is the largest per_page GitHub honours.
	MaxPerPage = 100
	// DefaultRateLimit is GitHub's primary rate limit for a personal access
	// token, requests per hour
	// (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api).
	DefaultRateLimit = 5000
	// DefaultRetryAfter is the Retry-After of an injected 429, in seconds.
	DefaultRetryAfter = 1
	// hookTimeout is how long GitHub waits for a webhook receiver
	// (https://docs.github.com/en/webhooks/using-webhooks/handling-webhook-deliveries).
	hookTimeout = 10 * time.Second
)

// Options configures a Sim. Zero values get defaults.
type Options struct {
	Logger *zap.Logger
	Clock  func() time.Time
	// Tokens are the accepted API tokens ("Authorization: token X" or
	// "Bearer X"); empty accepts any request, with or without a token.
	Tokens []string
	// PerPage is the default page size (GitHub: 30), capped at 100.
	PerPage int
	// RateLimit is the primary rate limit per token and hour (default 5000).
	RateLimit int
	// GraphQLRateLimit is the GitHub GraphQL points per token and hour
	// (default DefaultGraphQLRateLimit).
	GraphQLRateLimit int
	// Apps are the GitHub Apps whose JWTs the GitHub dialect accepts at
	// POST /app/installations/{id}/access_tokens; the installation tokens
	// it issues are accepted like Tokens until they expire.
	Apps []App
	// BaseURL is the sim's public URL ("http://127.0.0.1:8686") used in
	// webhook payloads' html_url/url fields. Empty: the last request's host.
	BaseURL string
	// NoGitHubIssueDependencies makes the GitHub dialect answer 404 for the
	// issue dependencies API, as a GitHub Enterprise Server without it does.
	NoGitHubIssueDependencies bool
	// GitHubIfMatch is how the GitHub dialect treats If-Match on writes
	// (github_etag.go). Empty means IfMatchRejectWeak, what GitHub does.
	GitHubIfMatch IfMatchMode
	// GitHubSharedETags gives every token the same ETag for the same
	// representation, so one token's If-None-Match revalidates another's
	// cache. Kind behaviour: GitHub's ETags are token-specific
	// (github_etag.go).
	GitHubSharedETags bool
	// GitHubSecondaryLimits makes the GitHub dialect enforce GitHub's
	// documented secondary limits (points per minute, content creation;
	// github_secondary.go). Off by default: most tests burst faster than
	// GitHub allows.
	GitHubSecondaryLimits bool
	// GitHubLabelsAsContent makes the secondary limits
	// (GitHubSecondaryLimits) count every REST write and every GraphQL
	// label mutation as content creation, label writes included: the
	// strict reading of a list GitHub does not publish
	// (github_secondary.go). Off: only creations count.
	GitHubLabelsAsContent bool
	// Branches, when set, says whether a branch exists in a repository: the
	// GitHub dialect refuses a pull request whose head or base it denies,
	// as GitHub refuses a branch that was never pushed (github_pulls.go).
	// Nil: every branch exists.
	Branches func(repo, branch string) bool
}

// Issue is a deep copy of one issue as the Go API returns it.
type Issue struct {
	Repo      string    `json:"repo"`
	Number    int       `json:"number"`
	Title     string    `json:"title"`
	Body      string    `json:"body"`
	Open      bool      `json:"open"`
	Labels    []string  `json:"labels"`
	Comments  []Comment `json:"comments"`
	ETag      string    `json:"etag"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Comment is one issue comment.
type Comment struct {
	Body   string    `json:"body"`
	Author string    `json:"author"`
	At     time.Time `json:"at"`
}

// Stats counts what the sim saw, for tests that assert on traffic.
type Stats struct {
	// Calls counts API requests by "METHOD route-template", e.g.
	// "PATCH /repos/{owner}/{repo}/issues/{number}", faulted ones included.
	Calls map[string]int `json:"calls"`
	// NotModified counts 304 answers to If-None-Match.
	NotModified int `json:"not_modified"`
	// Deliveries counts webhook POSTs made (each duplicate counts).
	Deliveries int `json:"deliveries"`
	// DeliveryFailures counts POSTs that failed or got a non-2xx answer.
	DeliveryFailures int `json:"delivery_failures"`
	// Dropped counts deliveries not sent because of Faults.DropRate.
	Dropped int `json:"dropped"`
	// TestDeliveries counts deliveries a client asked for through a test
	// endpoint (GitHub ping, GitLab test, Azure DevOps test notification).
	TestDeliveries int `json:"test_deliveries"`
	// SecondaryRefused counts requests and mutations refused by GitHub's
	// secondary limits (Options.GitHubSecondaryLimits), faults not
	// included.
	SecondaryRefused int `json:"secondary_refused"`
}

// Sim is one emulated tracker. It is safe for concurrent use.
type Sim struct {
	log       *zap.Logger
	clock     func() time.Time
	tokens    []string
	perPage   int
	rateLimit int
	// graphqlLimit is Options.GraphQLRateLimit.
	graphqlLimit int
	baseURL      string
	lastBase     atomic.Value // string
	noGHDeps     bool
	ifMatch      IfMatchMode
	// sharedETags is Options.GitHubSharedETags.
	sharedETags bool

	store    *store
	pulls    pullStore
	branches func(repo, branch string) bool
	apps     appTokens
	faults   faultState
	rate     rateLimiter
	hooks    hookSet
	check    checkState // what `agentsmithd check` reads: access, Jira deployment
	// screens are Jira's Edit screens and non-editable statuses.
	screens jiraScreens
	// jiraIndex is Jira Cloud's lagging search index (jira_index.go).
	jiraIndex searchIndex
	// ghIndex is GitHub's lagging issue search index (github_search.go).
	ghIndex searchIndex
	// searchRate is GitHub's search rate limit, apart from the core one.
	searchRate rateLimiter
	// graphqlRate is GitHub's GraphQL points budget, apart from the core
	// one (github_graphql.go).
	graphqlRate rateLimiter
	// secondary holds GitHub's secondary limits, enforced when secondaryOn.
	secondary   secondaryLimits
	secondaryOn bool
	// labelsAsContent is Options.GitHubLabelsAsContent.
	labelsAsContent bool
	// hookTests is GitLab's webhook test rate limit (gitlab_hooktest.go).
	hookTests windowLimiter
	reqSeq    atomic.Int64
	handler   http.Handler

	statsMu sync.Mutex
	stats   Stats
}

// New returns a running Sim; call Close to stop its webhook workers.
func New(opts Options) *Sim {
	s := &Sim{log: opts.Logger, clock: opts.Clock, tokens: slices.Clone(opts.Tokens),
		perPage: opts.PerPage, rateLimit: opts.RateLimit, baseURL: strings.TrimSuffix(opts.BaseURL, "/"),
		noGHDeps: opts.NoGitHubIssueDependencies, ifMatch: opts.GitHubIfMatch,
		sharedETags: opts.GitHubSharedETags, secondaryOn: opts.GitHubSecondaryLimits, labelsAsContent: opts.GitHubLabelsAsContent,
		branches: opts.Branches}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.perPage <= 0 {
		s.perPage = DefaultPerPage
	}
	s.perPage = min(s.perPage, MaxPerPage)
	if s.rateLimit <= 0 {
		s.rateLimit = DefaultRateLimit
	}
	s.graphqlLimit = opts.GraphQLRateLimit
	if s.graphqlLimit <= 0 {
		s.graphqlLimit = DefaultGraphQLRateLimit
	}
	if s.ifMatch == "" {
		s.ifMatch = IfMatchRejectWeak
	}
	s.stats.Calls = map[string]int{}
	s.apps = appTokens{apps: slices.Clone(opts.Apps), issued: map[string]time.Time{}}
	s.faults.set(Faults{})
	s.rate.buckets = map[string]*bucket{}
	s.hooks.init(s)
	s.store = newStore(s.clock)
	s.jiraIndex.init(DefaultJiraSearchLag)
	s.ghIndex.init(DefaultGitHubSearchLag)
	s.searchRate.buckets = map[string]*bucket{}
	s.searchRate.window, s.searchRate.resource = time.Minute, "search"
	s.graphqlRate.buckets = map[string]*bucket{}
	s.graphqlRate.resource = "graphql"
	s.store.sink = func(evs []storeEvent) {
		s.jiraIndex.record(s.clock(), evs[0].issue)
		s.ghIndex.record(s.clock(), evs[0].issue)
		s.onEvent(evs)
	}
	s.handler = s.routes()
	return s
}

// Handler serves the GitHub dialect under /github/, control JSON under /sim/
// and the HTML page at /.
func (s *Sim) Handler() http.Handler { return s.handler }

// Close stops the webhook workers; queued deliveries are discarded.
func (s *Sim) Close() { s.hooks.close() }

// CreateIssue opens an issue as a human, creating the repository ("owner/repo")
// if needed. Numbers count from 1 per repository. It fires issues/opened and
// one issues/labeled per label. The human is HumanLogin (write access).
func (s *Sim) CreateIssue(repo, title, body string, labels ...string) int {
	return s.As(HumanLogin).CreateIssue(repo, title, body, labels...)
}

// CreateLabel adds a label to a repository's labels without putting it on
// an issue, as a person does on the repository's label page; the repository
// must exist (CreateRepo). A GitHub write then names it in any case
// (update.FoldCase).
func (s *Sim) CreateLabel(repo, name string) error {
	_, _, err := s.store.createLabel(repo, name, "", "", false)
	return err
}

// RenameLabel renames a repository label, as a person does on the
// repository's label page: it keeps its id and node id, and every issue
// that had it has it under the new name.
func (s *Sim) RenameLabel(repo, oldName, newName string) error {
	_, exists, err := s.store.renameLabel(repo, oldName, newName)
	if err == nil && exists {
		err = fmt.Errorf("label %s: already exists", newName)
	}
	return err
}

// CreateRepo makes an empty repository, so the API answers for it (an empty
// list rather than 404) before its first issue.
func (s *Sim) CreateRepo(repo string) {
	if !s.store.createRepo(repo) {
		return
	}
	if strings.Contains(repo, "/") {
		s.githubRepositoryEvent("created", repo)
		s.gitlabSystemEvent("project_create", repo)
	} else { // a Jira project key
		s.jiraProjectEvent("project_created", repo)
	}
}

// AddLabels adds labels as a human user, firing issues/labeled per new label.
func (s *Sim) AddLabels(repo string, number int, labels ...string) error {
	return s.As(HumanLogin).AddLabels(repo, number, labels...)
}

// RemoveLabel removes a label as a human user, firing issues/unlabeled.
func (s *Sim) RemoveLabel(repo string, number int, label string) error {
	return s.As(HumanLogin).RemoveLabel(repo, number, label)
}

// EditLabel adds (add) or removes label as a human user: RemoveLabel or
// AddLabels, for tests that pick the edit at run time.
func (s *Sim) EditLabel(repo string, number int, label string, add bool) error {
	if add {
		return s.AddLabels(repo, number, label)
	}
	return s.RemoveLabel(repo, number, label)
}

// SetComponents sets a Jira issue's components, as someone editing the
// issue would (an issue_updated delivery with a Component changelog item).
func (s *Sim) SetComponents(repo string, number int, components ...string) error {
	_, _, err := s.store.apply(repo, number, nil, actor{login: HumanLogin}, update{Components: &components})
	return err
}

// SetOpen closes or reopens an issue as a human user.
func (s *Sim) SetOpen(repo string, number int, open bool) error {
	return s.As(HumanLogin).SetOpen(repo, number, open)
}

// AddComment comments on an issue as a human user.
func (s *Sim) AddComment(repo string, number int, body string) error {
	return s.As(HumanLogin).AddComment(repo, number, body)
}

// Issue returns a deep copy of one issue.
func (s *Sim) Issue(repo string, number int) (Issue, bool) {
	snap, err := s.store.get(repo, number)
	if err != nil {
		return Issue{}, false
	}
	return toIssue(snap), true
}

// Issues returns every issue, sorted by repository and number.
func (s *Sim) Issues() []Issue {
	snaps := s.store.all()
	out := make([]Issue, len(snaps))
	for i, sn := range snaps {
		out[i] = toIssue(sn)
	}
	return out
}

// Writes returns every label change so far, oldest first.
func (s *Sim) Writes() []Write { return s.store.writeLog() }

// Requests is the number of API requests the sim received, faulted ones
// included: what a tracker would count against the caller.
func (st Stats) Requests() int {
	n := 0
	for _, c := range st.Calls {
		n += c
	}
	return n
}

// Stats returns a copy of the counters.
func (s *Sim) Stats() Stats {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	out := s.stats
	out.Calls = make(map[string]int, len(s.stats.Calls))
	for k, v := range s.stats.Calls {
		out.Calls[k] = v
	}
	return out
}

func (s *Sim) count(f func(st *Stats)) {
	s.statsMu.Lock()
	f(&s.stats)
	s.statsMu.Unlock()
}

func toIssue(sn snapshot) Issue {
	is := Issue{Repo: sn.repo, Number: sn.number, Title: sn.title, Body: sn.body, Open: sn.open,
		Labels: sn.labelNames(), ETag: issueETag(sn), UpdatedAt: sn.updatedAt,
		Comments: make([]Comment, len(sn.comments))}
	for i, c := range sn.comments {
		is.Comments[i] = Comment{Body: c.body, Author: c.author, At: c.at}
	}
	return is
}

// base is the public URL used in JSON links.
func (s *Sim) base() string {
	if s.baseURL != "" {
		return s.baseURL
	}
	if b, ok := s.lastBase.Load().(string); ok {
		return b
	}
	return "http://localhost"
}

// requestBase is the scheme and host a request came in on.
func (s *Sim) requestBase(r *http.Request) string {
	if s.baseURL != "" {
		return s.baseURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	b := fmt.Sprintf("%s://%s", scheme, r.Host)
	s.lastBase.Store(b)
	return b
}

func (s *Sim) routes() http.Handler {
	mux := http.NewServeMux()
	s.githubRoutes(mux)
	s.dialectRoutes(mux)
	s.controlRoutes(mux)
	s.pageRoutes(mux)
	return mux
}

// WaitIdle blocks until every queued webhook delivery has been attempted, so
// a test can assert that a dropped delivery never arrives without sleeping.
func (s *Sim) WaitIdle(ctx context.Context) error { return s.hooks.waitIdle(ctx) }
