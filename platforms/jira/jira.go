// Package jira is the Jira implementation of platforms.Tracker and
// platforms.WebhookDecoder, on go-jira. Jira has no conditional write: its
// label update (PUT /rest/api/{v}/issue/{key} with "update.labels" add and
// remove operations) is last-write-wins. Relabel therefore runs only while it
// holds a short Redis lock (agentsmith:jira-label-lock:{ticket}, through
// Options.Locker); a lock someone else holds is platforms.ErrPreconditionFailed.
// Because the write names only the labels it adds and removes, labels other
// writers set meanwhile survive it. On Jira Cloud the write asks for the
// issue in its answer (returnIssue), so Relabel answers with the whole
// ticket and refuses one whose lifecycle labels another writer moved
// (platforms.WholeAnswers); Data Center's edit answers 204 without a body.
//
// Jira Cloud (REST v3, e-mail + API token as basic auth, comments in the
// Atlassian Document Format) and Data Center (REST v2, personal access token
// as a bearer token, plain-text comments) are both served; Options.Deployment
// picks one. The go-jira SDK builds, authenticates and sends every request;
// its typed services are not used because they are hard-wired to REST v2 and
// to the /rest/api/2/search endpoint that Jira Cloud has removed.
package jira

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	jirasdk "github.com/andygrunwald/go-jira"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Platform is the platform name in Refs and configuration.
const Platform = "jira"

// Deployments Options.Deployment accepts.
const (
	// DeploymentCloud is Jira Cloud: REST v3, ADF comment bodies, search
	// through /rest/api/3/search/jql with nextPageToken.
	DeploymentCloud = "cloud"
	// DeploymentDataCenter is Jira Data Center (and Server): REST v2,
	// plain-text comment bodies, search through /rest/api/2/search with
	// startAt/maxResults/total.
	DeploymentDataCenter = "datacenter"
)

const (
	// DefaultLockTTL is the specification's TTL of the label lock: long
	// enough for one PUT, short enough that a crashed writer blocks the
	// ticket only briefly.
	DefaultLockTTL = keys.JiraLabelLockTTL
	// pageSize is the search page the tracker asks for. Jira Cloud may
	// return fewer when many fields are requested; both endpoints say where
	// to continue, so a short page is harmless.
	pageSize = 100
)

// issueFields are the only fields the tracker reads; asking for them keeps
// responses small (Jira returns every field by default on GET issue).
const issueFields = "summary,description,labels,status,project"

// Options configures a Tracker bound to one Jira project.
type Options struct {
	// BaseURL is the site root: https://your-site.atlassian.net/ for Cloud,
	// the context path of a Data Center instance (https://jira.example.com/
	// or https://example.com/jira/). Required: Jira has no shared host. The
	// emulator's is its URL + "/jira/".
	BaseURL string
	// Repo is the Jira project key ("PROJ"). Empty when JQL is set.
	Repo string
	// JQL, instead of Repo, makes the tracker's tickets the issues a JQL
	// query selects across the site's projects ("project in (A, B) AND
	// component = Payments"); see scope.go.
	JQL string
	// Project is the configured project name, copied into every Ref.
	Project string
	// Token is the Cloud API token (with Email) or the Data Center personal
	// access token (without); never logged.
	Token string
	// Email is the Atlassian account of a Cloud API token, sent as basic
	// auth. Empty means Token is a personal access token sent as Bearer.
	Email string
	// Deployment is DeploymentCloud (the default) or DeploymentDataCenter.
	Deployment string
	// HTTPClient defaults to a client over trackerhttp (rate limits, writer
	// tag) with DefaultTimeout. Authentication is added on top of it.
	HTTPClient *http.Client
	// Logger defaults to zap.NewNop().
	Logger *zap.Logger
	// Writer, when set, is sent with each write of the default client
	// (trackerhttp.WriterHeader) for trackersim's write log. Leave it empty
	// for a real tracker, which has no use for the header.
	Writer string
	// Locker guards every label write; required, because Jira's write is
	// unconditional.
	Locker platforms.Locker
	// LockTTL is how long one label write may hold the lock; 0 means
	// DefaultLockTTL.
	LockTTL time.Duration
	// ReconcileWindow is how long a label write of this tracker is passed
	// to Cloud searches as reconcileIssues (reconcile.go); 0 means
	// DefaultReconcileWindow.
	ReconcileWindow time.Duration
	// Clock defaults to time.Now.
	Clock func() time.Time
	// LabelPrefix is the lifecycle labels' prefix, by which a Cloud write's
	// answer tells a lifecycle label another writer moved; "" means
	// platforms.DefaultLabelPrefix.
	LabelPrefix string
	// Lifecycle are the lifecycle's state labels
	// (platforms.TrackerOptions.Lifecycle), which with the stage labels
	// are the labels whose move by another writer a Cloud write's answer
	// is checked for (platforms.Moving); empty, every label with
	// LabelPrefix counts.
	Lifecycle []string
}

// Tracker is one Jira project. It is safe for concurrent use.
type Tracker struct {
	client  *jirasdk.Client
	site    string // BaseURL with a trailing slash, for browse links
	api     string // "rest/api/3/" or "rest/api/2/"
	cloud   bool
	key     string // the project key; "" for a JQL scope
	jql     string // the JQL scope; "" for a project key
	project string
	locker  platforms.Locker
	lockTTL time.Duration
	moving  platforms.Moving
	log     *zap.Logger
	// recent are this tracker's recent writes, reconciled by Cloud searches.
	recent recentWrites
	scope  platforms.SearchScope
}

var _ platforms.Tracker = (*Tracker)(nil)

// projectKey is the shape of a Jira project key: Jira's default pattern is
// an uppercase letter then uppercase letters, digits or underscores, and
// administrators may widen it, so case is not enforced here.
var projectKey = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// CheckProjectKey validates a configured project key.
func CheckProjectKey(key string) error {
	if !projectKey.MatchString(key) {
		return fmt.Errorf(`jira: project key %q: want a key such as "PROJ" (a letter, then letters, digits or "_")`, key)
	}
	return nil
}

// New validates opts and builds a Tracker. It makes no network call.
func New(opts Options) (*Tracker, error) {
	switch {
	case opts.JQL != "" && opts.Repo != "":
		return nil, errors.New("jira: set either a project key (repo) or a JQL scope, not both")
	case opts.JQL != "":
		if err := CheckScope(opts.JQL); err != nil {
			return nil, fmt.Errorf("jira: the JQL scope %w", err)
		}
	default:
		if err := CheckProjectKey(opts.Repo); err != nil {
			return nil, err
		}
	}
	if opts.Locker == nil {
		return nil, errors.New("jira: a Locker is required: Jira label writes are unconditional and run only under agentsmith:jira-label-lock")
	}
	if opts.BaseURL == "" {
		return nil, errors.New("jira: base URL is required (the site, such as https://your-site.atlassian.net/)")
	}
	deployment := opts.Deployment
	if deployment == "" {
		deployment = DeploymentCloud
	}
	var api string
	switch deployment {
	case DeploymentCloud:
		api = "rest/api/3/"
	case DeploymentDataCenter:
		api = "rest/api/2/"
	default:
		return nil, fmt.Errorf("jira: deployment %q: want %q or %q", opts.Deployment, DeploymentCloud, DeploymentDataCenter)
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = trackerhttp.NewClientWith(trackerhttp.Options{Logger: log.Named("http"), Writer: opts.Writer, RateLimits: trackerhttp.JiraRateLimits})
	}
	hc = authed(hc, opts)
	site := opts.BaseURL
	if !strings.HasSuffix(site, "/") {
		site += "/"
	}
	u, err := url.Parse(site)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("jira: base URL: want an absolute http(s) URL")
	}
	client, err := jirasdk.NewClient(hc, site)
	if err != nil {
		return nil, fmt.Errorf("jira: client: %w", err)
	}
	ttl := opts.LockTTL
	if ttl <= 0 {
		ttl = DefaultLockTTL
	}
	window := opts.ReconcileWindow
	if window <= 0 {
		window = DefaultReconcileWindow
	}
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	prefix := opts.LabelPrefix
	if prefix == "" {
		prefix = platforms.DefaultLabelPrefix
	}
	return &Tracker{
		scope: platforms.SearchScope{Platform: Platform, Endpoint: site + api, Owner: strings.ToLower(u.Host),
			Credential: platforms.CredentialID(opts.Email + ":" + opts.Token), Filter: opts.JQL},
		jql:     opts.JQL,
		recent:  recentWrites{now: clock, window: window},
		client:  client,
		site:    site,
		api:     api,
		cloud:   deployment == DeploymentCloud,
		key:     opts.Repo,
		project: opts.Project,
		locker:  opts.Locker,
		lockTTL: ttl,
		moving:  platforms.Moving{Prefix: prefix + ":", States: slices.Clone(opts.Lifecycle)},
		log:     log.With(zap.String("platform", Platform), zap.String("repo", opts.Repo), zap.Bool("jqlScope", opts.JQL != "")),
	}, nil
}

// Locator is the project key the tracker is bound to; webhook events carry
// the same string (issue.fields.project.key) to route a delivery. A JQL
// scope has none: its deliveries are routed by their secret (scope.go).
func (t *Tracker) Locator() string { return t.key }

// FormatID is the platform-unique ticket ID: the issue key, "PROJ-12".
// Issue keys are unique within a Jira site.
func FormatID(projectKey string, number int) string { return idForm.Format(projectKey, number) }

// idForm is the form of Jira issue keys.
var idForm = platforms.NumberedID{Platform: Platform, Sep: '-', Want: "an issue key such as PROJ-12", CheckLocator: CheckProjectKey}

// ParseID is FormatID's inverse.
func ParseID(id string) (projectKey string, number int, err error) { return idForm.Parse(id) }

// issueKey resolves ref to an issue key of this tracker's project. A ref of
// another project is refused: the token and the project belong to this one.
// A JQL scope spans projects: any issue key of the site resolves, and
// membership is the claim's to check (InScope).
func (t *Tracker) issueKey(ref platforms.Ref) (string, error) {
	if t.jql != "" {
		if ref.Platform != Platform {
			return "", fmt.Errorf("jira: ticket %s is not a Jira issue", ref)
		}
		if _, _, err := ParseID(ref.ID); err != nil {
			return "", err
		}
		return ref.ID, nil
	}
	if _, err := idForm.Resolve(ref, t.key); err != nil {
		return "", err
	}
	return ref.ID, nil
}

// Get reads the issue. Jira has no version token, so Version stays empty.
// Docs: GET /rest/api/3/issue/{issueIdOrKey} (Cloud),
// GET /rest/api/2/issue/{issueIdOrKey} (Data Center).
func (t *Tracker) Get(ctx context.Context, ref platforms.Ref) (*platforms.Ticket, error) {
	key, err := t.issueKey(ref)
	if err != nil {
		return nil, err
	}
	var is apiIssue
	path := t.api + "issue/" + url.PathEscape(key) + "?fields=" + issueFields
	if err := t.do(ctx, http.MethodGet, path, nil, &is); err != nil {
		return nil, fmt.Errorf("jira: get %s: %w", key, err)
	}
	return t.ticket(&is), nil
}

// Relabel removes remove and adds add in one unconditional label update, run
// only while this process holds the ticket's label lock. The update names
// only those labels, so every other label, including ones a concurrent
// writer added, survives.
//
// On Cloud the update asks for the issue in its answer (returnIssue=true:
// "200 … if the request is successful and the returnIssue parameter is
// true", the issue "in the same format as in the Get issue API"). The
// returned ticket is that answer, Whole, and a write whose answer shows a
// lifecycle label another writer moved since tk was read is
// platforms.ErrPreconditionFailed (platforms.LabelConflict), as on GitLab:
// the write went through, and the caller reads the ticket again.
//
// Data Center's edit answers 204 without a body and has no returnIssue;
// there, and on a Cloud answer without the issue, the returned ticket is
// tk with the same edit applied, which is what Jira now holds for the
// labels the write named, and not Whole.
// Docs: PUT /rest/api/3/issue/{issueIdOrKey} with "update": {"labels":
// [{"remove": …}, {"add": …}]}
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/#api-rest-api-3-issue-issueidorkey-put).
func (t *Tracker) Relabel(ctx context.Context, tk *platforms.Ticket, remove []string, add ...string) (*platforms.Ticket, error) {
	key, err := t.issueKey(tk.Ref)
	if err != nil {
		return nil, err
	}
	add = platforms.LabelSet(Platform, add)
	var ops []map[string]string
	var removed []string
	for _, l := range platforms.LabelSet(Platform, remove) {
		if !platforms.ContainsLabel(Platform, add, l) {
			ops = append(ops, map[string]string{"remove": l})
			removed = append(removed, l)
		}
	}
	for _, a := range add {
		if strings.ContainsFunc(a, unicode.IsSpace) {
			return nil, fmt.Errorf("jira: relabel %s: label %q contains spaces, which Jira labels cannot", key, a)
		}
		ops = append(ops, map[string]string{"add": a})
	}
	out := *tk
	out.Labels = applyLabels(tk.Labels, remove, add)
	out.Whole = false
	if len(ops) == 0 {
		return &out, nil
	}

	unlock, ok, err := t.locker.TryLock(ctx, keys.JiraLabelLock(tk.Ref.Key()), t.lockTTL)
	if err != nil {
		return nil, fmt.Errorf("jira: relabel %s: take label lock: %w", key, err)
	}
	if !ok {
		return nil, fmt.Errorf("jira: relabel %s: label lock held by another writer: %w", key, platforms.ErrPreconditionFailed)
	}
	body := map[string]any{"update": map[string]any{"labels": ops}}
	path := t.api + "issue/" + url.PathEscape(key)
	if t.cloud {
		path += "?returnIssue=true"
	}
	answer, err := t.edit(ctx, path, body)
	t.recent.wrote(key) // even on an error: the write may have been applied
	// The lock serialises the write alone: explaining a refusal (an
	// editmeta GET) words the error and writes nothing, so other writers
	// of the ticket do not wait for it.
	unlock()
	if err != nil {
		return nil, fmt.Errorf("jira: relabel %s: %w", key, t.explainRefusal(ctx, key, err))
	}
	if answer != nil {
		if why := platforms.LabelConflict(Platform, t.moving, tk.Labels, removed, add, answer.Fields.Labels); why != "" {
			t.log.Info("relabel raced another writer", zap.String("ticket", key), zap.String("reason", why),
				zap.Strings("labels", answer.Fields.Labels))
			return nil, fmt.Errorf("jira: relabel %s: %s (last write wins on Jira): %w", key, why, platforms.ErrPreconditionFailed)
		}
		whole := t.ticket(answer)
		whole.Ref = tk.Ref
		out = *whole
	}
	t.log.Debug("relabelled", zap.String("ticket", key), zap.Strings("remove", remove), zap.Strings("add", add), zap.Bool("whole", out.Whole))
	return &out, nil
}

// AnswersWhole is true on Cloud (platforms.WholeAnswers): Relabel's edit
// asks for the issue in its answer and checks it. Data Center's edit
// answers 204 without a body, so a caller there reads the ticket before it
// acts on it.
func (t *Tracker) AnswersWhole() bool { return t.cloud }

// maxAnswer bounds the issue an edit answers with, which the tracker holds
// whole to decode on every label write: the issue's fields, comments
// included, since Edit issue takes no fields parameter. An issue whose
// answer is larger (a long thread of comments: Jira takes 32,767
// characters in each) is discarded unread beyond the bound and the write
// answers not Whole, which costs the caller one read.
const maxAnswer = 1 << 20

// edit sends the label update and returns the issue Jira answered with, if
// it answered with one that carries every field the tracker reads (nil
// otherwise: 204, or an answer the tracker cannot use whole; the write
// went through either way).
func (t *Tracker) edit(ctx context.Context, path string, body any) (*apiIssue, error) {
	resp, err := t.send(ctx, http.MethodPut, path, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if resp.StatusCode != http.StatusOK || err != nil || len(raw) == 0 || len(raw) > maxAnswer {
		return nil, nil
	}
	var is apiIssue
	var present struct {
		Fields map[string]json.RawMessage `json:"fields"`
	}
	if json.Unmarshal(raw, &is) != nil || json.Unmarshal(raw, &present) != nil {
		t.log.Warn("label update answered with an issue that does not decode; treating the answer as labels only", zap.String("path", path))
		return nil, nil
	}
	for _, f := range strings.Split(issueFields, ",") {
		if _, ok := present.Fields[f]; !ok {
			t.log.Debug("label update answered without a field the tracker reads; treating the answer as labels only", zap.String("field", f))
			return nil, nil
		}
	}
	return &is, nil
}

// Comment posts body on the issue: an ADF document on Cloud (REST v3 takes
// nothing else), wiki markup on Data Center (REST v2 renders the string as
// wiki markup, so ``` fences become {code} blocks).
// Docs: POST /rest/api/3/issue/{issueIdOrKey}/comment, 201 Created.
func (t *Tracker) Comment(ctx context.Context, ref platforms.Ref, body string) error {
	_, err := t.AddComment(ctx, ref, body)
	return err
}

// AddComment posts body and returns the comment's id
// (platforms.CommentEditor).
func (t *Tracker) AddComment(ctx context.Context, ref platforms.Ref, body string) (string, error) {
	key, err := t.issueKey(ref)
	if err != nil {
		return "", err
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := t.do(ctx, http.MethodPost, t.api+"issue/"+url.PathEscape(key)+"/comment", t.commentPayload(body), &out); err != nil {
		return "", fmt.Errorf("jira: comment on %s: %w", key, err)
	}
	return out.ID, nil
}

// EditComment replaces the body of comment id: PUT
// /rest/api/{2|3}/issue/{key}/comment/{id}, the body in the same form as
// Comment's (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-comments/#api-rest-api-3-issue-issueidorkey-comment-id-put).
func (t *Tracker) EditComment(ctx context.Context, ref platforms.Ref, id, body string) error {
	key, err := t.issueKey(ref)
	if err != nil {
		return err
	}
	if id == "" || strings.Trim(id, "0123456789") != "" {
		return fmt.Errorf("jira: edit comment %q on %s: not a comment id", id, key)
	}
	if err := t.do(ctx, http.MethodPut, t.api+"issue/"+url.PathEscape(key)+"/comment/"+id, t.commentPayload(body), nil); err != nil {
		return fmt.Errorf("jira: edit comment %s on %s: %w", id, key, err)
	}
	return nil
}

// commentPayload is a comment's body as the API version takes it.
func (t *Tracker) commentPayload(body string) any {
	if t.cloud {
		return map[string]any{"body": TextToADF(body)}
	}
	return map[string]any{"body": TextToWiki(body)}
}

// ListQuery is the JQL ListOpen sends for label in project; the emulator
// parses exactly this shape. Ordering by key keeps offset pagination stable.
func ListQuery(project, label string) string {
	return fmt.Sprintf(`project = %s AND labels = %s AND statusCategory != Done ORDER BY key ASC`, jqlString(project), jqlString(label))
}

// jqlString quotes s as a JQL string literal.
func jqlString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// ListOpen lists the project's issues carrying label whose status is not in
// the Done category, all pages. The tickets have no Version; none has.
//
// Cloud uses POST /rest/api/3/search/jql with nextPageToken, and passes the
// issues this tracker wrote recently as reconcileIssues so its own writes
// are visible at once (reconcile.go); the rest of the index may lag, so a
// listed ticket is a hint its caller confirms with Get before acting.
// Atlassian removed GET /rest/api/{2,3}/search from Cloud (changelog
// CHANGE-2046; the removed endpoint answers 410), which is what go-jira
// v1.16's IssueService.Search calls. Data Center keeps GET
// /rest/api/2/search with startAt/maxResults/total, which is consistent.
func (t *Tracker) ListOpen(ctx context.Context, label string) ([]*platforms.Ticket, error) {
	jql, where := ListQuery(t.key, label), t.key
	if t.jql != "" {
		jql, where = ScopeQuery(t.jql, label), "the JQL scope"
	}
	out, err := t.search(ctx, jql, label, t.ticket)
	if err != nil {
		return nil, fmt.Errorf("jira: list open issues labelled %q in %s: %w", label, where, err)
	}
	return out, nil
}

// search runs jql through the deployment's search, following pagination,
// and keeps the issues carrying label exactly (JQL compares labels by its
// own rules; the lifecycle needs the exact label, so look-alikes are
// dropped), converted by conv.
func (t *Tracker) search(ctx context.Context, jql, label string, conv func(*apiIssue) *platforms.Ticket) ([]*platforms.Ticket, error) {
	var out []*platforms.Ticket
	collect := func(res *searchResult) {
		for i := range res.Issues {
			if tk := conv(&res.Issues[i]); tk.HasLabel(label) {
				out = append(out, tk)
			}
		}
	}
	if t.cloud {
		req := jqlSearchRequest{JQL: jql, Fields: strings.Split(issueFields, ","), MaxResults: pageSize,
			ReconcileIssues: t.recent.reconcile()}
		for page := 1; ; page++ {
			var res searchResult
			if err := t.do(ctx, http.MethodPost, t.api+"search/jql", req, &res); err != nil {
				return nil, fmt.Errorf("page %d: %w", page, err)
			}
			collect(&res)
			if res.IsLast || res.NextPageToken == "" || len(res.Issues) == 0 {
				return out, nil
			}
			req.NextPageToken = res.NextPageToken
		}
	}
	q := url.Values{}
	q.Set("jql", jql)
	q.Set("fields", issueFields)
	q.Set("maxResults", strconv.Itoa(pageSize))
	for page := 1; ; page++ {
		var res searchResult
		if err := t.do(ctx, http.MethodGet, t.api+"search?"+q.Encode(), nil, &res); err != nil {
			return nil, fmt.Errorf("page %d: %w", page, err)
		}
		collect(&res)
		next := res.StartAt + len(res.Issues)
		if len(res.Issues) == 0 || next >= res.Total {
			return out, nil
		}
		q.Set("startAt", strconv.Itoa(next))
	}
}

// jqlSearchRequest is the body of POST /rest/api/3/search/jql
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-search/#api-rest-api-3-search-jql-post).
type jqlSearchRequest struct {
	JQL             string   `json:"jql"`
	Fields          []string `json:"fields"`
	MaxResults      int      `json:"maxResults"`
	NextPageToken   string   `json:"nextPageToken,omitempty"`
	ReconcileIssues []int64  `json:"reconcileIssues,omitempty"`
}

// do sends one request through the SDK and decodes a 2xx JSON answer into v
// (when non-nil). Errors carry Jira's errorMessages and map onto the
// platform sentinels.
func (t *Tracker) do(ctx context.Context, method, path string, body, v any) error {
	resp, err := t.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if v == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("decode %s response: %w", resp.Request.URL.Path, err)
	}
	return nil
}

// send sends one request through the SDK and returns its 2xx answer, whose
// body the caller closes. Errors are do's.
func (t *Tracker) send(ctx context.Context, method, path string, body any) (*jirasdk.Response, error) {
	req, err := t.client.NewRequestWithContext(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := t.client.Do(req, nil)
	if err != nil {
		if resp == nil {
			return nil, err
		}
		return nil, classify(resp, err)
	}
	return resp, nil
}

// classify turns a non-2xx answer into an error with Jira's messages,
// wrapping the platform sentinel callers decide on.
func classify(resp *jirasdk.Response, httpErr error) error {
	code := resp.StatusCode
	err := jirasdk.NewJiraError(resp, httpErr) // reads and closes the body
	switch code {
	case http.StatusNotFound, http.StatusGone:
		return fmt.Errorf("%w: %w", platforms.ErrNotFound, err)
	case http.StatusTooManyRequests:
		return fmt.Errorf("%w: %w", trackerhttp.ErrRateLimited, err)
	}
	return platforms.Rejected(code, err)
}

// apiIssue is the part of an issue the tracker reads. description is a
// string in REST v2 and an ADF document in REST v3.
type apiIssue struct {
	ID     string `json:"id"`
	Key    string `json:"key"`
	Self   string `json:"self"`
	Fields struct {
		Summary     string          `json:"summary"`
		Description json.RawMessage `json:"description"`
		Labels      []string        `json:"labels"`
		Status      *struct {
			StatusCategory *struct {
				Key string `json:"key"`
			} `json:"statusCategory"`
		} `json:"status"`
		Project *struct {
			Key string `json:"key"`
		} `json:"project"`
	} `json:"fields"`
}

// searchResult covers both search endpoints: v2's offset page and the
// Cloud search/jql token page.
type searchResult struct {
	Issues        []apiIssue `json:"issues"`
	StartAt       int        `json:"startAt"`
	MaxResults    int        `json:"maxResults"`
	Total         int        `json:"total"`
	NextPageToken string     `json:"nextPageToken"`
	IsLast        bool       `json:"isLast"`
}

func (t *Tracker) ticket(is *apiIssue) *platforms.Ticket {
	t.recent.learn(is.Key, is.ID)
	tk := issueTicket(t.site, is)
	tk.Ref.Project = t.project
	tk.Whole = true
	return tk
}

// issueTicket converts an issue; site is the browse root. Shared by the API
// and webhook paths.
func issueTicket(site string, is *apiIssue) *platforms.Ticket {
	labels := is.Fields.Labels
	if labels == nil {
		labels = []string{}
	}
	open := true
	if st := is.Fields.Status; st != nil && st.StatusCategory != nil {
		open = st.StatusCategory.Key != "done"
	}
	tk := &platforms.Ticket{
		Ref:    platforms.Ref{Platform: Platform, ID: is.Key},
		Title:  is.Fields.Summary,
		Body:   descriptionText(is.Fields.Description),
		Open:   open,
		Labels: labels,
	}
	if site != "" {
		tk.URL = site + "browse/" + is.Key
	}
	return tk
}

// applyLabels is what Jira does to labels with the update Relabel sends:
// remove each of remove, then add each of add unless present. Others keep
// their order.
func applyLabels(labels, remove, add []string) []string {
	out := slices.DeleteFunc(slices.Clone(labels), func(l string) bool {
		return !platforms.ContainsLabel(Platform, add, l) && platforms.ContainsLabel(Platform, remove, l)
	})
	for _, a := range add {
		if !platforms.ContainsLabel(Platform, out, a) {
			out = append(out, a)
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// descriptionText is the description as text, whichever REST version
// returned it; an unreadable one is empty rather than an error, since the
// labels, not the text, decide the lifecycle.
func descriptionText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ADFToText(raw)
}

// WebURL is the issue's page, {site}/browse/{KEY-n}.
func (t *Tracker) WebURL(ref platforms.Ref) (string, error) {
	if _, err := t.issueKey(ref); err != nil {
		return "", err
	}
	return t.site + "browse/" + ref.ID, nil
}

// authed returns hc authenticating as opts say: Cloud's basic auth with
// the account's email and API token, Data Center's bearer personal access
// token. It wraps the caller's transport, so trackerhttp sees the
// credential and keeps rate-limit state per token; no token, no change.
func authed(hc *http.Client, opts Options) *http.Client {
	if opts.Token == "" {
		return hc
	}
	c := *hc
	if opts.Email != "" {
		c.Transport = &jirasdk.BasicAuthTransport{Username: opts.Email, Password: opts.Token, Transport: hc.Transport}
	} else {
		c.Transport = &jirasdk.BearerAuthTransport{Token: opts.Token, Transport: hc.Transport}
	}
	return &c
}
