// Package github is the GitHub Issues implementation of platforms.Tracker
// and platforms.WebhookDecoder, on go-github. Reads are conditional GETs
// (If-None-Match; a 304 costs no rate limit). Lifecycle writes are not
// conditional, because GitHub has no conditional write it honours: it
// answers If-Match with the weak ETags of its gzip responses 400, and a stale
// strong one 412 after applying the write. Relabel instead adds and removes
// single labels, so other people's labels are never overwritten, and checks
// each answer for a lifecycle label another writer put there
// (platforms.ErrPreconditionFailed). The claim lock and the run lock in
// Redis keep the daemon's own writers apart.
package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v60/github"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Platform is the platform name in Refs and configuration.
const Platform = "github"

const (
	// perPage is the largest page GitHub serves, to list in few requests.
	perPage = 100
)

// Options configures a Tracker bound to one repository.
type Options struct {
	// BaseURL is the REST API root; "" means https://api.github.com/. The
	// emulator's is its URL + "/github/".
	BaseURL string
	// Repo is "owner/repo".
	Repo string
	// Project is the configured project name, copied into every Ref.
	Project string
	// Token authenticates API calls; never logged. Ignored when App is set.
	Token string
	// App, when set, authenticates as a GitHub App installation instead of
	// with Token.
	App *App
	// HTTPClient defaults to a client over trackerhttp (rate limits, ETag
	// cache, writer tag) with trackerhttp.ClientTimeout.
	HTTPClient *http.Client
	// Logger defaults to zap.NewNop().
	Logger *zap.Logger
	// Writer, when set, is sent with each write of the default client
	// (trackerhttp.WriterHeader) for trackersim's write log. Leave it empty
	// for a real tracker, which has no use for the header.
	Writer string
	// LabelPrefix is the lifecycle label prefix (default "agent-smith"); a
	// "<prefix>:…" label that appears during a Relabel without being written
	// by it means another writer moved the ticket.
	LabelPrefix string
	// Lifecycle are the lifecycle's state labels
	// (platforms.TrackerOptions.Lifecycle), which with the stage labels
	// are the labels whose appearance during a Relabel counts
	// (platforms.Moving); empty, every label with LabelPrefix counts.
	Lifecycle []string
	// Spellings are the labels the daemon writes and reads, as configured
	// (the lifecycle labels and the trigger label). GitHub label names are
	// case-insensitive and a repository keeps one spelling of each
	// (platforms.SameLabel): adding "agent-smith:enqueued" where the
	// repository has "Agent-Smith:Enqueued" attaches the latter. The tracker
	// reads such a label in the spelling here, so the lifecycle sees the
	// state it wrote.
	Spellings []string
	// API is how Relabel writes: APIREST ("" too) with REST's per-label
	// endpoints, APIGraphQL with one GraphQL request per transition
	// (graphql.go), REST being its fallback.
	API string
}

// App is a GitHub App installation's credentials. The tracker signs a JWT
// with PrivateKey, trades it for an installation access token at
// POST {base}/app/installations/{id}/access_tokens, and renews the token a
// minute before its hour is up (ghinstallation), so no long-lived token
// exists anywhere.
type App struct {
	AppID, InstallationID int64
	// PrivateKey is the app's PEM-encoded RSA key; never logged.
	PrivateKey []byte
}

// Tracker is one GitHub repository. It is safe for concurrent use.
type Tracker struct {
	client      *gh.Client
	scope       platforms.SearchScope
	owner, name string
	repo        string
	project     string
	moving      platforms.Moving
	spellings   []string
	log         *zap.Logger
	// api, http, graphqlURL and ids serve the GraphQL write path
	// (graphql.go): http is the SDK's authenticated client.
	api        string
	http       *http.Client
	graphqlURL string
	ids        nodeIDs
}

var (
	_ platforms.Tracker = (*Tracker)(nil)
	_ platforms.Reactor = (*Tracker)(nil)
)

// New validates opts and builds a Tracker. It makes no network call.
func New(opts Options) (*Tracker, error) {
	owner, name, ok := splitRepo(opts.Repo)
	if !ok {
		return nil, fmt.Errorf("github: repo %q: want owner/repo", opts.Repo)
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if opts.API != "" && opts.API != APIREST && opts.API != APIGraphQL {
		return nil, fmt.Errorf("github: api %q: want %q or %q", opts.API, APIREST, APIGraphQL)
	}
	client, baseURL, err := newClient(opts, log)
	if err != nil {
		return nil, err
	}
	prefix := opts.LabelPrefix
	if prefix == "" {
		prefix = platforms.DefaultLabelPrefix
	}
	cred := platforms.CredentialID(opts.Token)
	if opts.App != nil {
		cred = fmt.Sprintf("app:%d:%d", opts.App.AppID, opts.App.InstallationID)
	}
	return &Tracker{
		scope:      platforms.SearchScope{Platform: Platform, Endpoint: baseURL.String(), Owner: strings.ToLower(owner), Credential: cred},
		moving:     platforms.Moving{Prefix: prefix + ":", States: slices.Clone(opts.Lifecycle)},
		spellings:  slices.Clone(opts.Spellings),
		client:     client,
		owner:      owner,
		name:       name,
		repo:       owner + "/" + name,
		project:    opts.Project,
		log:        log.With(zap.String("platform", Platform), zap.String("repo", owner+"/"+name)),
		api:        opts.API,
		http:       client.Client(),
		graphqlURL: graphqlURL(baseURL),
	}, nil
}

// newClient builds the SDK client of opts: its base URL, the token or the
// App installation's, over opts.HTTPClient or the platform's default.
func newClient(opts Options, log *zap.Logger) (*gh.Client, *url.URL, error) {
	hc := opts.HTTPClient
	if hc == nil {
		hc = trackerhttp.NewClientWith(trackerhttp.Options{Logger: log.Named("http"), Writer: opts.Writer, RateLimits: trackerhttp.GitHubRateLimits})
	}
	if hc.CheckRedirect == nil {
		// An injected client follows only redirects to the same resource,
		// as the default one does: never into a transferred issue.
		c := *hc
		c.CheckRedirect = trackerhttp.CheckRedirect
		hc = &c
	}
	base := apiRoot(opts.BaseURL)
	baseURL, err := url.Parse(base)
	if err != nil {
		return nil, nil, fmt.Errorf("github: base URL %q: %w", opts.BaseURL, err)
	}
	var client *gh.Client
	switch {
	case opts.App != nil:
		if !carriesApp(hc, *opts.App, base) {
			if hc, err = appClient(hc, *opts.App, base); err != nil {
				return nil, nil, err
			}
		}
		client = gh.NewClient(hc)
	default:
		client = gh.NewClient(hc)
		if opts.Token != "" {
			client = client.WithAuthToken(opts.Token)
		}
	}
	client.BaseURL = baseURL
	return client, baseURL, nil
}

// DefaultBaseURL is GitHub.com's REST API root.
const DefaultBaseURL = "https://api.github.com/"

// apiRoot is the REST API root of a configured base URL ("" is
// GitHub.com's), with its trailing slash.
func apiRoot(baseURL string) string {
	if baseURL == "" {
		return DefaultBaseURL
	}
	if !strings.HasSuffix(baseURL, "/") {
		baseURL += "/"
	}
	return baseURL
}

// AppHTTPClient is hc authenticated as app's installation at baseURL (""
// for GitHub.com). Options.HTTPClient set to it, with the same App, is
// used as it is: whoever keeps it keeps one installation token across
// calls, which ghinstallation renews shortly before it expires. A caller
// that lists repeatedly needs that, because GitHub's ETags belong to a
// token (eclipse-csi/otterdog#201): with a new token per listing no page
// is ever answered 304, and every page is charged to the core quota.
func AppHTTPClient(hc *http.Client, app App, baseURL string) (*http.Client, error) {
	return appClient(hc, app, apiRoot(baseURL))
}

// carriesApp reports whether hc already authenticates as app's
// installation at base (AppHTTPClient).
func carriesApp(hc *http.Client, app App, base string) bool {
	itr, ok := hc.Transport.(*ghinstallation.Transport)
	return ok && itr.AppID() == app.AppID && itr.InstallationID() == app.InstallationID &&
		itr.BaseURL == strings.TrimSuffix(base, "/")
}

// appClient wraps hc's transport in an installation-token transport whose
// token requests go to base (GitHub Enterprise's or the sim's API root),
// over the same transport stack (rate limits, writer tag, fences).
func appClient(hc *http.Client, app App, base string) (*http.Client, error) {
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	itr, err := ghinstallation.New(rt, app.AppID, app.InstallationID, app.PrivateKey)
	if err != nil {
		// The error names the parse failure, never the key.
		return nil, fmt.Errorf("github: app %d: private key: %w", app.AppID, err)
	}
	itr.BaseURL = strings.TrimSuffix(base, "/")
	out := *hc
	out.Transport = itr
	return &out, nil
}

// Locator is the repository the tracker is bound to, "owner/repo"; webhook
// events carry the same string to route a delivery to its project.
func (t *Tracker) Locator() string { return t.repo }

// FormatID is the platform-unique ticket ID: "owner/repo#12".
func FormatID(repo string, number int) string { return idForm.Format(repo, number) }

// idForm is the form of GitHub ticket ids.
var idForm = platforms.NumberedID{Platform: Platform, Sep: '#', Want: "owner/repo#number", CheckLocator: checkRepoID}

func checkRepoID(repo string) error {
	if _, _, ok := splitRepo(repo); !ok {
		return fmt.Errorf("want owner/repo")
	}
	return nil
}

// ParseID is FormatID's inverse.
func ParseID(id string) (repo string, number int, err error) { return idForm.Parse(id) }

func splitRepo(repo string) (owner, name string, ok bool) {
	owner, name, ok = strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.ContainsAny(name, "/#") || strings.ContainsAny(owner, "#") {
		return "", "", false
	}
	return owner, name, true
}

// number resolves ref to its number in this tracker's project; a ref of
// another project is refused.
func (t *Tracker) number(ref platforms.Ref) (int, error) {
	return idForm.Resolve(ref, t.repo)
}

// Get reads the issue; Version is its ETag. Pull requests share the issue
// number space but are not tickets, so they read as ErrNotFound.
func (t *Tracker) Get(ctx context.Context, ref platforms.Ref) (*platforms.Ticket, error) {
	n, err := t.number(ref)
	if err != nil {
		return nil, err
	}
	issue, resp, err := t.client.Issues.Get(ctx, t.owner, t.name, n)
	if err != nil {
		return nil, fmt.Errorf("github: get %s: %w", ref.ID, classify(err))
	}
	if issue.PullRequestLinks != nil {
		return nil, fmt.Errorf("github: get %s: is a pull request: %w", ref.ID, platforms.ErrNotFound)
	}
	if issue.GetNumber() != n {
		// Answered for another issue (a redirect followed by a client
		// without trackerhttp.CheckRedirect): never ours.
		return nil, fmt.Errorf("github: get %s: answered with issue %d: %w", ref.ID, issue.GetNumber(), platforms.ErrNotFound)
	}
	tk := t.ticket(issue)
	tk.Version = resp.Header.Get("ETag")
	return tk, nil
}

// Relabel moves the issue's labels with GitHub's per-label endpoints and no
// If-Match: POST /repos/{o}/{r}/issues/{n}/labels adds every label of add
// the issue lacks in one call (the endpoint takes a list, "Add labels to an
// issue", docs.github.com/en/rest/issues/labels), then DELETE
// …/labels/{name} removes each label of remove still present. GitHub
// documents conditional requests for GETs only and refuses the weak ETags
// it serves with gzip in If-Match (400, ChronoAIProject/fkst-packages#557),
// or answers a stale one 412 after writing anyway (cli/cli#7167), so no
// write here is conditional; and because each call names only its labels, a
// human's concurrent edit of any other label is never overwritten, which a
// PATCH of the full list would do.
//
// Adding before removing means an interrupted Relabel leaves the old and the
// new lifecycle labels together, which lifecycle.Labels.StateOf reads as the
// further state (never as a claimable Pending) and housekeeping's
// LabelRepairer cleans up. Each answer is the issue's full label list; a
// lifecycle label in it that neither tk nor this write put there means
// another writer moved the ticket: ErrPreconditionFailed, after taking back
// the added labels if nothing was removed yet. Non-lifecycle labels that
// come and go are other people's edits, never a conflict.
//
// tk needs no Version (a listed ticket can be written), but its Labels must
// be fresh: they are what a foreign lifecycle label is recognised against.
// The returned ticket carries the labels of the last answer and no Version,
// since a label answer does not give the issue's new ETag.
//
// With Options.API graphql the write goes through GraphQL instead
// (relabelGraphQL), in one request.
func (t *Tracker) Relabel(ctx context.Context, tk *platforms.Ticket, remove []string, add ...string) (*platforms.Ticket, error) {
	if t.api == APIGraphQL && !viaREST(ctx) {
		return t.relabelGraphQL(ctx, tk, remove, add)
	}
	n, err := t.number(tk.Ref)
	if err != nil {
		return nil, err
	}
	add = platforms.LabelSet(Platform, add)
	labels := tk.Labels
	var missing []string
	for _, l := range add {
		if !platforms.ContainsLabel(Platform, tk.Labels, l) {
			missing = append(missing, l)
		}
	}
	if len(missing) > 0 {
		if labels, err = t.addLabels(ctx, n, missing); err != nil {
			return nil, fmt.Errorf("github: relabel %s: add %q: %w", tk.Ref.ID, missing, err)
		}
		if l := t.foreignLifecycle(tk.Labels, add, labels); l != "" {
			// Take our labels back so the lost race wrote nothing; best
			// effort: if this fails, StateOf still resolves the pair.
			for _, a := range missing {
				if _, err := t.removeLabel(ctx, n, a); err != nil {
					t.log.Warn("relabel raced another writer; taking back an added label failed",
						zap.String("ticket", tk.Ref.ID), zap.String("label", a), zap.Error(err))
				}
			}
			return nil, t.raced(tk, l, labels)
		}
	}
	for _, l := range remove {
		if l == "" || platforms.ContainsLabel(Platform, add, l) || !platforms.ContainsLabel(Platform, labels, l) {
			continue
		}
		if labels, err = t.removeLabel(ctx, n, l); err != nil {
			return nil, fmt.Errorf("github: relabel %s: remove %q: %w", tk.Ref.ID, l, err)
		}
		if l := t.foreignLifecycle(tk.Labels, add, labels); l != "" {
			return nil, t.raced(tk, l, labels)
		}
	}
	out := *tk
	out.Labels = labels
	out.Version, out.Whole = "", false
	t.log.Debug("relabelled", zap.String("ticket", tk.Ref.ID), zap.Strings("remove", remove), zap.Strings("add", add))
	return &out, nil
}

// addLabels is POST …/issues/{n}/labels with the labels; the answer is
// every label on the issue now.
func (t *Tracker) addLabels(ctx context.Context, n int, labels []string) ([]string, error) {
	got, _, err := t.client.Issues.AddLabelsToIssue(ctx, t.owner, t.name, n, labels)
	if err != nil {
		return nil, classify(err)
	}
	return t.respell(labelNames(got)), nil
}

// removeLabel removes label, whatever case the repository spells it in.
// It deletes label as given; when GitHub answers that the issue has no such
// label, it reads the issue's labels as GitHub spells them and deletes the
// one that is label but for case, if any, so the write never depends on
// whether GitHub matches the name in the path case-insensitively.
func (t *Tracker) removeLabel(ctx context.Context, n int, label string) ([]string, error) {
	got, missing, err := t.deleteLabel(ctx, n, label)
	if err != nil || !missing {
		return got, err
	}
	raw, err := t.issueLabels(ctx, n)
	if err != nil {
		return nil, err
	}
	if r, ok := platforms.OtherSpelling(Platform, raw, label); ok {
		if got, missing, err = t.deleteLabel(ctx, n, r); err != nil || !missing {
			return got, err
		}
		// Someone removed it meanwhile: the goal holds.
		return t.respell(slices.DeleteFunc(raw, func(l string) bool { return platforms.SameLabel(Platform, l, label) })), nil
	}
	return t.respell(raw), nil
}

// notOnIssue is GitHub's message for a DELETE of a label the issue lacks.
const notOnIssue = "Label does not exist"

// issueLabels is GET …/issues/{n}/labels, every page, in GitHub's spelling.
func (t *Tracker) issueLabels(ctx context.Context, n int) ([]string, error) {
	opts := &gh.ListOptions{PerPage: perPage}
	var out []string
	for {
		ls, resp, err := t.client.Issues.ListLabelsByIssue(ctx, t.owner, t.name, n, opts)
		if err != nil {
			return nil, classify(err)
		}
		out = append(out, labelNames(ls)...)
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// deleteLabel is DELETE …/issues/{n}/labels/{name}; the answer is every
// label left on the issue. GitHub answers 404 "Label does not exist" when the
// label is not on the issue so spelled (someone removed it first, or it is
// there in another case): missing, not an error.
func (t *Tracker) deleteLabel(ctx context.Context, n int, label string) (labels []string, missing bool, err error) {
	u := fmt.Sprintf("repos/%s/%s/issues/%d/labels/%s", t.owner, t.name, n, url.PathEscape(label))
	req, err := t.client.NewRequest(http.MethodDelete, u, nil)
	if err != nil {
		return nil, false, err
	}
	var got []*gh.Label
	if _, err := t.client.Do(ctx, req, &got); err != nil {
		var er *gh.ErrorResponse
		if errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotFound &&
			strings.EqualFold(er.Message, notOnIssue) {
			return nil, true, nil
		}
		return nil, false, classify(err)
	}
	return t.respell(labelNames(got)), false, nil
}

// respell reads labels in the daemon's spelling (Options.Spellings).
func (t *Tracker) respell(labels []string) []string {
	return platforms.Respell(Platform, labels, t.spellings)
}

// foreignLifecycle returns a lifecycle label of got that neither the
// snapshot had nor this write adds and whose move counts (platforms.Moving:
// a person's decision label does not), or "".
func (t *Tracker) foreignLifecycle(snapshot, add, got []string) string {
	for _, l := range got {
		if !platforms.ContainsLabel(Platform, add, l) && t.moving.Has(Platform, l) && !platforms.ContainsLabel(Platform, snapshot, l) {
			return l
		}
	}
	return ""
}

func (t *Tracker) raced(tk *platforms.Ticket, label string, got []string) error {
	t.log.Info("relabel raced another writer", zap.String("ticket", tk.Ref.ID), zap.String("appeared", label),
		zap.Strings("labels", got))
	return fmt.Errorf("github: relabel %s: lifecycle label %q appeared from another writer: %w",
		tk.Ref.ID, label, platforms.ErrPreconditionFailed)
}

func labelNames(ls []*gh.Label) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		if l != nil && l.Name != nil {
			out = append(out, *l.Name)
		}
	}
	return out
}

// Comment posts body on the issue.
func (t *Tracker) Comment(ctx context.Context, ref platforms.Ref, body string) error {
	_, err := t.AddComment(ctx, ref, body)
	return err
}

// AddComment posts body on the issue and returns the comment's id
// (platforms.CommentEditor).
func (t *Tracker) AddComment(ctx context.Context, ref platforms.Ref, body string) (string, error) {
	n, err := t.number(ref)
	if err != nil {
		return "", err
	}
	c, _, err := t.client.Issues.CreateComment(ctx, t.owner, t.name, n, &gh.IssueComment{Body: &body})
	if err != nil {
		return "", fmt.Errorf("github: comment on %s: %w", ref.ID, classify(err))
	}
	return strconv.FormatInt(c.GetID(), 10), nil
}

// EditComment replaces the body of comment id: PATCH
// /repos/{o}/{r}/issues/comments/{id}
// (https://docs.github.com/rest/issues/comments#update-an-issue-comment).
func (t *Tracker) EditComment(ctx context.Context, ref platforms.Ref, id, body string) error {
	cid, err := strconv.ParseInt(id, 10, 64)
	if err != nil || cid <= 0 {
		return fmt.Errorf("github: edit comment %q on %s: not a comment id", id, ref.ID)
	}
	if _, _, err := t.client.Issues.EditComment(ctx, t.owner, t.name, cid, &gh.IssueComment{Body: &body}); err != nil {
		return fmt.Errorf("github: edit comment %s on %s: %w", id, ref.ID, classify(err))
	}
	return nil
}

// React adds the reaction name (a GitHub reaction content such as "eyes")
// to the issue: POST /repos/{o}/{r}/issues/{n}/reactions, which answers 200
// instead of 201 when the bot already reacted so.
func (t *Tracker) React(ctx context.Context, ref platforms.Ref, name string) error {
	n, err := t.number(ref)
	if err != nil {
		return err
	}
	if _, _, err := t.client.Reactions.CreateIssueReaction(ctx, t.owner, t.name, n, name); err != nil {
		return fmt.Errorf("github: react %s on %s: %w", name, ref.ID, classify(err))
	}
	return nil
}

// ListOpen lists open issues carrying label, all pages. Pull requests are
// skipped. The tickets carry no Version: list responses have no per-issue
// ETag, so a caller that writes must Get the ticket first.
func (t *Tracker) ListOpen(ctx context.Context, label string) ([]*platforms.Ticket, error) {
	opts := &gh.IssueListByRepoOptions{
		State:       "open",
		Labels:      []string{label},
		ListOptions: gh.ListOptions{PerPage: perPage},
	}
	var out []*platforms.Ticket
	for {
		issues, resp, err := t.client.Issues.ListByRepo(ctx, t.owner, t.name, opts)
		if err != nil {
			return nil, fmt.Errorf("github: list open issues labelled %q in %s (page %d): %w", label, t.repo, max(opts.Page, 1), classify(err))
		}
		for _, is := range issues {
			if is.PullRequestLinks != nil {
				continue
			}
			out = append(out, t.ticket(is))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

func (t *Tracker) ticket(is *gh.Issue) *platforms.Ticket {
	t.ids.setIssue(is.GetNumber(), is.GetNodeID())
	tk := issueTicket(t.repo, is)
	tk.Ref.Project = t.project
	tk.Labels = t.respell(tk.Labels)
	tk.Whole, tk.Node = true, is.GetNodeID()
	return tk
}

// issueTicket converts an issue of repo; shared by the API and webhook paths.
func issueTicket(repo string, is *gh.Issue) *platforms.Ticket {
	labels := make([]string, 0, len(is.Labels))
	for _, l := range is.Labels {
		if l != nil && l.Name != nil {
			labels = append(labels, *l.Name)
		}
	}
	return &platforms.Ticket{
		Ref:    platforms.Ref{Platform: Platform, ID: FormatID(repo, is.GetNumber())},
		Title:  is.GetTitle(),
		Body:   is.GetBody(),
		URL:    is.GetHTMLURL(),
		Open:   is.GetState() == "open",
		Labels: labels,
	}
}

// classify maps API errors onto the platform sentinels callers decide on.
func classify(err error) error {
	if errors.Is(err, trackerhttp.ErrRateLimited) {
		return err
	}
	// A redirect to another issue (a transferred one) was refused: the
	// ticket is no longer in the tracker's repository.
	if errors.Is(err, trackerhttp.ErrMovedElsewhere) {
		return fmt.Errorf("%w: %w", platforms.ErrNotFound, err)
	}
	var er *gh.ErrorResponse
	hasResp := errors.As(err, &er) && er.Response != nil
	// go-github reports the primary limit as RateLimitError and a 403
	// secondary limit as AbuseRateLimitError, and refuses requests by itself
	// while it believes either lasts; a 429 secondary limit stays a plain
	// ErrorResponse. Callers get the one sentinel for all of them, before
	// any 4xx is taken for a permanent refusal.
	var (
		rl    *gh.RateLimitError
		abuse *gh.AbuseRateLimitError
	)
	if errors.As(err, &rl) || errors.As(err, &abuse) || (hasResp && er.Response.StatusCode == http.StatusTooManyRequests) {
		return fmt.Errorf("%w: %w", trackerhttp.ErrRateLimited, err)
	}
	if hasResp {
		switch er.Response.StatusCode {
		case http.StatusPreconditionFailed:
			return fmt.Errorf("%w: %w", platforms.ErrPreconditionFailed, err)
		case http.StatusNotFound, http.StatusGone:
			return fmt.Errorf("%w: %w", platforms.ErrNotFound, err)
		}
		return platforms.Rejected(er.Response.StatusCode, err)
	}
	return err
}

// WebURL is the issue's page: https://github.com/{owner}/{repo}/issues/{n}
// for api.github.com, {host}/{owner}/{repo}/issues/{n} for GitHub Enterprise
// Server (API root {host}/api/v3/), and the API root itself as web root for
// any other base URL (the sim).
func (t *Tracker) WebURL(ref platforms.Ref) (string, error) {
	n, err := idForm.Resolve(ref, t.repo)
	if err != nil {
		return "", err
	}
	u := *t.client.BaseURL
	switch {
	case u.Host == "api.github.com":
		u.Host, u.Path = "github.com", "/"
	case strings.HasSuffix(u.Path, "/api/v3/"):
		u.Path = strings.TrimSuffix(u.Path, "api/v3/")
	}
	return u.String() + t.repo + "/issues/" + strconv.Itoa(n), nil
}
