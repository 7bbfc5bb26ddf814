package trackerhttp

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// RateLimits is how one tracker says "slow down" and how the transport
// answers it. The trackers differ in header names, in time formats, in
// whether a 403 can be a rate limit, and in what "none remaining" means (stop
// until the reset, or: you are being delayed, space your requests), so each
// platform package gives its client its own (Options.RateLimits). The zero
// value is the behaviour every tracker got before the policies existed:
// X-RateLimit-Remaining / X-RateLimit-Reset in Unix seconds, a 403 is a rate
// limit only with Retry-After or none remaining, a 429 that names no time is
// retried after DefaultBackoff.
type RateLimits struct {
	// Name labels log lines ("github").
	Name string
	// Remaining names the header with the quota left; "" means
	// X-RateLimit-Remaining.
	Remaining string
	// Limit names the header with the quota's size; "" means
	// X-RateLimit-Limit. It sizes the reserve of a shared budget.
	Limit string
	// Resets lists the headers that say when the quota comes back, first
	// one present wins; nil means X-RateLimit-Reset in Unix seconds. A reset
	// is waited for only when the quota is reported exhausted or not
	// reported at all: GitHub sends its primary window's reset on secondary
	// limit answers too, and waiting for that would be up to an hour.
	Resets []ResetHeader
	// ForbiddenMarkers are texts (any case) whose presence in a 403's body
	// makes it a rate-limit answer although quota remains: GitHub's
	// secondary limits. Without them a 403 is a rate limit only with
	// Retry-After or none remaining.
	ForbiddenMarkers []string
	// Unexplained is the wait after a rate-limit answer that names no time
	// (no Retry-After, no usable reset): Initial, doubled for each such
	// answer in a row up to Max, and requests for the same credentials are
	// held (not sent) meanwhile. Zero means DefaultBackoff and no hold.
	Unexplained Backoff
	// Pace, when Pace.Max > 0, reads "none remaining" on an answer that is
	// not a rate limit as "the tracker is delaying you" (Azure DevOps): the
	// transport spaces further requests instead of holding them until the
	// reset, which may be minutes away while requests still succeed.
	Pace Pace
	// RetryUnavailable makes a 503 that carries Retry-After an answer to
	// wait out and retry (Jira Cloud: "a 503 response may be returned when
	// a resource limit has been reached").
	RetryUnavailable bool
	// Resource, when set, names the quota a request spends, so a limit hit
	// on one quota holds only the requests that spend it: GitHub's search
	// endpoints have their own 30-a-minute limit apart from the core
	// 5,000-an-hour one, and an exhausted search must not hold claims for
	// the rest of its minute. nil means one quota per host and credentials.
	Resource func(req *http.Request) string
	// Secondary are limits paced before sending, across replicas, when
	// Options.Budget is a Pacer (GitHub's secondary limits).
	Secondary []Secondary
	// SecondaryScope lists the resources (Resource values) that one
	// refusal leaving the primary quota (remaining not 0) holds together:
	// GitHub's secondary limits count a token's REST and GraphQL requests
	// together (content creation, concurrency), and a refusal does not say
	// which limit it was. Nil: a refusal holds its own resource only.
	SecondaryScope []string
	// RefusedOK, when set, says whether a 2xx answer is a rate-limit
	// refusal (GitHub's GraphQL endpoint answers a mutation over the
	// content creation limit 200 with an error). It holds the credentials
	// as a refusal does but is returned, not retried: part of the request
	// may have run.
	RefusedOK func(req *http.Request, resp *http.Response) bool
}

// ResetFormat is how a reset header writes its time.
type ResetFormat int

const (
	// ResetUnix is seconds since the epoch ("1700000000").
	ResetUnix ResetFormat = iota
	// ResetHTTPDate is an HTTP date ("Tue, 05 Jan 2021 11:00:00 GMT").
	ResetHTTPDate
	// ResetISO8601 is an ISO 8601 timestamp; Jira Cloud writes
	// "yyyy-MM-ddTHH:mmZ" (minutes, no seconds), RFC 3339 is accepted too.
	ResetISO8601
)

// ResetHeader is one header that says when a rate limit resets.
type ResetHeader struct {
	Name   string
	Format ResetFormat
}

// Backoff is an exponential wait: Initial, doubled on each repeat, at most
// Max.
type Backoff struct {
	Initial, Max time.Duration
}

// after is the wait for the n-th answer in a row (0-based).
func (b Backoff) after(n int) time.Duration {
	d := b.Initial
	for i := 0; i < n && d < b.Max; i++ {
		d *= 2
	}
	return min(d, max(b.Max, b.Initial))
}

// Pace spaces requests while a tracker delays them.
type Pace struct {
	// Header holds the delay the tracker imposed, in (decimal) seconds.
	Header string
	// Min and Max bound the space between two requests.
	Min, Max time.Duration
	// Window is how long pacing lasts after the last "none remaining"
	// answer when the tracker's reset is later or absent.
	Window time.Duration
}

// Policies of the four trackers. Each value's comment names its sources.
var (
	// GitHubRateLimits: primary limit exhausted → 403/429 with
	// x-ratelimit-remaining 0, wait until x-ratelimit-reset; secondary
	// limits → 403 or 429 "You have exceeded a secondary rate limit",
	// Retry-After only sometimes (hub4j/github-api#1805); without it "wait
	// for at least one minute before retrying", exponentially longer on
	// repeats
	// (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#exceeding-the-rate-limit,
	// https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api#handle-rate-limit-errors-appropriately).
	// The bound of the doubling is ours (GitHub names none).
	GitHubRateLimits = RateLimits{
		Name:             "github",
		ForbiddenMarkers: []string{"secondary rate limit", "secondary-rate-limits", "abuse"},
		Unexplained:      Backoff{Initial: time.Minute, Max: 16 * time.Minute},
		Resource:         GitHubResource,
		Secondary:        GitHubSecondary,
		SecondaryScope:   []string{"core", "graphql", "search"},
		RefusedOK:        githubGraphQLRefused,
	}
	// GitHubRateLimitsLabelsAsContent is GitHubRateLimits pacing the
	// strict reading of the content creation limit
	// (GitHubSecondaryLabelsAsContent, github.pace_labels_as_content).
	GitHubRateLimitsLabelsAsContent = GitHubRateLimits.withSecondary(GitHubSecondaryLabelsAsContent)
	// GitLabRateLimits: RateLimit-Limit, -Observed, -Remaining, -Reset
	// (Unix), -ResetTime (HTTP date), without "X-", and Retry-After on a
	// throttled answer
	// (https://docs.gitlab.com/administration/settings/user_and_ip_rate_limits/#response-headers);
	// gitlab.com answers some 429s with none of them
	// (gitlab-org/gitlab#365728, gitlab-org/gitlab#352409, and no
	// Retry-After on gitlab-org/gitlab#199738). The throttles count per
	// period, one minute by default, so a bare 429 holds for a minute,
	// doubling up to ten (some windows are ten minutes,
	// python-gitlab/python-gitlab#1889).
	GitLabRateLimits = RateLimits{
		Name:      "gitlab",
		Remaining: "RateLimit-Remaining",
		Limit:     "RateLimit-Limit",
		Resets: []ResetHeader{
			{Name: "RateLimit-Reset", Format: ResetUnix},
			{Name: "RateLimit-ResetTime", Format: ResetHTTPDate},
		},
		Unexplained: Backoff{Initial: time.Minute, Max: 10 * time.Minute},
	}
	// AzureDevOpsRateLimits: over its TSTU budget Azure DevOps delays
	// requests ("from a few milliseconds per request up to 30 seconds") and
	// answers them 200 with X-RateLimit-Remaining 0, X-RateLimit-Delay (the
	// delay, decimal seconds) and X-RateLimit-Reset (when usage would be
	// back to 0 if it stopped now, up to five minutes); it blocks with 429
	// and Retry-After only beyond that
	// (https://learn.microsoft.com/azure/devops/integrate/concepts/rate-limits).
	// So remaining 0 on a 200 spaces our requests by the delay Azure DevOps
	// imposed, between 250 ms and 5 s (our bounds: Microsoft names no
	// client pace), and never stops them for minutes. A 429 without
	// Retry-After is not documented; no evidence says how long to wait, so
	// it gets a short doubling hold rather than the one-second retry.
	AzureDevOpsRateLimits = RateLimits{
		Name:        "azuredevops",
		Unexplained: Backoff{Initial: 5 * time.Second, Max: time.Minute},
		Pace:        Pace{Header: "X-RateLimit-Delay", Min: 250 * time.Millisecond, Max: 5 * time.Second, Window: 5 * time.Minute},
	}
	// JiraRateLimits: 429 with Retry-After (seconds) and X-RateLimit-Reset
	// as an ISO 8601 timestamp "yyyy-MM-ddTHH:mmZ"; some 503s carry
	// Retry-After and "can be handled with similar logic"; a 429 with
	// neither: min(2 × last delay, 30 s) starting from 5 s
	// (https://developer.atlassian.com/cloud/jira/platform/rate-limiting/,
	// JRACLOUD-69262).
	JiraRateLimits = RateLimits{
		Name:             "jira",
		Resets:           []ResetHeader{{Name: "X-RateLimit-Reset", Format: ResetISO8601}},
		Unexplained:      Backoff{Initial: 10 * time.Second, Max: 30 * time.Second},
		RetryUnavailable: true,
	}
)

// GitHubResource is the GitHub quota a request spends, as GitHub's
// X-RateLimit-Resource names it: "search" for the search endpoints
// (https://docs.github.com/en/rest/search/search#rate-limit), "graphql"
// for the GraphQL endpoint, whose points budget is apart from REST's
// (https://docs.github.com/en/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api;
// /graphql on api.github.com, /api/graphql on GitHub Enterprise Server),
// "core" for the rest. The API root may carry a prefix (GitHub
// Enterprise's /api/v3). GraphQL is a POST to that endpoint only
// ("the endpoint remains constant no matter what operation you perform",
// https://docs.github.com/en/graphql/guides/forming-calls-with-graphql):
// a GET of a path that ends in /graphql is a REST read (a user or
// repository named graphql) and spends core.
func GitHubResource(req *http.Request) string {
	if isGitHubGraphQL(req) {
		return "graphql"
	}
	p := req.URL.Path
	if i := strings.Index(p, "/search/"); i >= 0 && !strings.Contains(p[:i], "/repos/") {
		return "search"
	}
	return "core"
}

// githubGraphQLRefused says whether a GraphQL answer is a secondary-limit
// refusal: GitHub answers those 200 or 403 with an error naming the
// secondary limit
// (https://docs.github.com/en/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api#exceeding-the-rate-limit),
// and a mutation over the content creation limit 200 with
// {"type":"UNPROCESSABLE","message":"was submitted too quickly"}
// (cli/cli#4801, Azure/azure-sdk-tools#7226). A 403 is read by
// ForbiddenMarkers like REST's.
func githubGraphQLRefused(req *http.Request, resp *http.Response) bool {
	return resp.StatusCode == http.StatusOK && isGitHubGraphQL(req) &&
		bodyMentions(resp, []string{"submitted too quickly", "secondary rate limit"})
}

// isGitHubGraphQL says whether req is a GraphQL request: a POST to a
// path ending in /graphql outside REST's /repos/, /users/ and /orgs/
// trees.
func isGitHubGraphQL(req *http.Request) bool {
	p := req.URL.Path
	if req.Method != http.MethodPost || !strings.HasSuffix(p, "/graphql") {
		return false
	}
	for _, tree := range []string{"/repos/", "/users/", "/orgs/"} {
		if strings.Contains(p, tree) {
			return false
		}
	}
	return true
}

// GitHubSecondary are GitHub's documented secondary limits
// (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits,
// the same for the GraphQL API), paced for the default reading of which
// requests create content: content creation, at most 80 requests a minute
// and 500 an hour across REST and GraphQL; and points per minute, at most
// 900 on REST (a read 1, a write 5) and 2,000 on GraphQL (a request 1,
// with a mutation 5). Which requests create content GitHub does not list;
// the reports are of creating issues and comments ("was submitted too
// quickly" creating issues, cli/cli#4801, where a GitHub engineer names
// the side effects of "every issue or comment creation", notifications and
// @-mentions; issue creation in checkmarx-ltd/cx-flow#1078; comment
// creation in apache/arrow#48162), so a label write on an issue is not
// counted as content here and pays points only (githubContentCost). Every
// other write counts, the cautious reading for the rest.
// GitHubSecondaryLabelsAsContent is the strict reading.
//
// Only writes are paced: a read would cost a shared-store round trip for
// a limit (900 a minute) that the primary one (5,000 an hour) keeps far off
// but in bursts of reads; the points window leaves a fifth of each minute
// to those unpaced reads. Each window is a second longer than GitHub's,
// for the time between pacing a request and GitHub counting it.
var GitHubSecondary = githubSecondary(githubContentCost)

// GitHubSecondaryLabelsAsContent are GitHubSecondary counting every write
// as content creation, label writes included, and every GraphQL mutation
// as one creation (github.pace_labels_as_content): for a token whose label
// changes GitHub refuses as content creation. It caps a token at 500
// label writes an hour.
var GitHubSecondaryLabelsAsContent = githubSecondary(githubWriteCost)

// githubSecondary are GitHub's secondary limits with content as the
// content creation limit's cost.
func githubSecondary(content func(*http.Request) int) []Secondary {
	return []Secondary{
		{Name: "content", Cost: content, Windows: []Window{
			{Max: 80, Per: time.Minute + githubPaceMargin}, {Max: 500, Per: time.Hour + githubPaceMargin}}},
		{Name: "points", Cost: githubPointsCost, Scope: githubPointsScope, Windows: []Window{
			{Max: githubWritePointsPerMinute, Per: time.Minute + githubPaceMargin}}},
	}
}

// githubWritePointsPerMinute is the share of REST's 900 points a minute
// the paced writes may take; the rest is left to reads, which are not
// paced.
const githubWritePointsPerMinute = 720

// githubPaceMargin lengthens GitHub's secondary windows by the time a
// paced request takes to reach GitHub.
const githubPaceMargin = time.Second

// githubWriteCost is what a write may create in the strict reading, in
// content units: 0 for a read and for minting an App installation token,
// which has a limit of its own; a GraphQL request's mutation count when
// its context carries one (WithLabelMutations), since GitHub may count
// each mutation as one creation; else 1.
func githubWriteCost(req *http.Request) int {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return 0
	}
	if strings.Contains(req.URL.Path, "/app/installations/") {
		return 0
	}
	if n, ok := req.Context().Value(labelMutationsKey{}).(int); ok && n > 1 {
		return n
	}
	return 1
}

// githubContentCost is githubWriteCost but for label writes on an issue,
// which create no content: REST's POST, PUT and DELETE of
// …/issues/{n}/labels[/{name}] and a GraphQL request of label mutations
// (WithLabelMutations) cost 0.
func githubContentCost(req *http.Request) int {
	if _, ok := req.Context().Value(labelMutationsKey{}).(int); ok && isGitHubGraphQL(req) {
		return 0
	}
	if githubIssueLabels.MatchString(req.URL.Path) {
		return 0
	}
	return githubWriteCost(req)
}

// githubIssueLabels matches the path of an issue's labels and of one of
// them (REST's "Labels" endpoints on an issue), under any API root.
var githubIssueLabels = regexp.MustCompile(`/repos/[^/]+/[^/]+/issues/[0-9]+/labels(/|$)`)

type labelMutationsKey struct{}

// WithLabelMutations marks ctx's requests as GraphQL documents carrying n
// label mutations (addLabelsToLabelable, removeLabelsFromLabelable), for
// the content creation limit's pacing: no content in the default reading
// (GitHubSecondary), n creations in the strict one.
func WithLabelMutations(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, labelMutationsKey{}, n)
}

// githubPointsCost is a write's secondary points, 0 for a read (not
// paced). GraphQL's 2,000 a minute is paced in the same window as REST's
// 900 with the cost scaled by 900/2,000 (a mutation's 5 → 3, rounded up),
// so one window serves both endpoints.
func githubPointsCost(req *http.Request) int {
	switch {
	case githubWriteCost(req) == 0:
		return 0
	case GitHubResource(req) == "graphql":
		return 3
	}
	return 5
}

// githubPointsScope is the endpoint a request's secondary points count
// in: GraphQL's, or REST's.
func githubPointsScope(req *http.Request) string {
	if GitHubResource(req) == "graphql" {
		return "graphql"
	}
	return "rest"
}

// withSecondary is p pacing s.
func (p RateLimits) withSecondary(s []Secondary) RateLimits {
	p.Secondary = s
	return p
}

func (p RateLimits) withDefaults() RateLimits {
	if p.Remaining == "" {
		p.Remaining = headerRemaining
	}
	if p.Limit == "" {
		p.Limit = "X-RateLimit-Limit"
	}
	if p.Resets == nil {
		p.Resets = []ResetHeader{{Name: headerReset, Format: ResetUnix}}
	}
	if p.Pace.Max > 0 && p.Pace.Window <= 0 {
		p.Pace.Window = 5 * time.Minute
	}
	return p
}

// reset reads the first reset header present in h.
func (p RateLimits) reset(h http.Header) (time.Time, bool) {
	for _, r := range p.Resets {
		v := strings.TrimSpace(h.Get(r.Name))
		if v == "" {
			continue
		}
		switch r.Format {
		case ResetUnix:
			return parseUnix(v)
		case ResetHTTPDate:
			t, err := http.ParseTime(v)
			return t, err == nil
		case ResetISO8601:
			return parseISO8601(v)
		}
	}
	return time.Time{}, false
}

// paceOf is the space between requests a delayed answer asks for.
func (p RateLimits) paceOf(h http.Header) time.Duration {
	d := p.Pace.Min
	if secs, err := strconv.ParseFloat(strings.TrimSpace(h.Get(p.Pace.Header)), 64); err == nil && secs > 0 && secs < 1e6 {
		d = time.Duration(secs * float64(time.Second))
	}
	return min(max(d, p.Pace.Min), p.Pace.Max)
}

// iso8601Minute are the minute forms of X-RateLimit-Reset: Jira Cloud's
// documented "yyyy-MM-ddTHH:mmZ", and with a numeric zone.
var iso8601Minute = []string{"2006-01-02T15:04Z07:00", "2006-01-02T15:04Z0700"}

// parseISO8601 reads an ISO 8601 reset. A minute form names a reset
// somewhere in that minute (Jira computes request time + Retry-After and
// drops the seconds), so it is read as the minute's end: waiting for its
// start would come back early and be refused again.
func parseISO8601(v string) (time.Time, bool) {
	for _, l := range iso8601Minute {
		if t, err := time.Parse(l, v); err == nil {
			return t.Add(time.Minute), true
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, true
	}
	return time.Time{}, false
}
