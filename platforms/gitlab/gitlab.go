// Package gitlab is the GitLab Issues implementation of platforms.Tracker
// and platforms.WebhookDecoder, on go-gitlab (all SDK calls are in sdk.go).
//
// GitLab has no conditional issue update, so lifecycle writes are
// last-write-wins. Relabel narrows the window instead: it names only the
// labels it changes (add_labels/remove_labels), so other labels are never
// rewritten, and it checks the issue GitLab returns after the write. If the
// result is not exactly the snapshot's other labels plus the added one minus
// the removed ones, or a lifecycle label it did not write appeared, another
// writer was at work and Relabel reports platforms.ErrPreconditionFailed.
// The Redis claim-lock remains the real mutual exclusion.
package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Platform is the platform name in Refs and configuration.
const Platform = "gitlab"

const (
	// DefaultBaseURL is GitLab.com's REST API root.
	DefaultBaseURL = "https://gitlab.com/api/v4/"
	// perPage is the largest page GitLab serves
	// (https://docs.gitlab.com/api/rest/#offset-based-pagination).
	perPage = 100
)

// Options configures a Tracker bound to one project.
type Options struct {
	// BaseURL is the instance or its REST root: "https://gitlab.example.com"
	// and "https://gitlab.example.com/api/v4/" are the same; "" means
	// GitLab.com. The emulator's is its URL + "/gitlab/".
	BaseURL string
	// Repo is the project's full path, "group/subgroup/project".
	Repo string
	// Project is the configured project name, copied into every Ref.
	Project string
	// Token is a personal, project or group access token with the api
	// scope; never logged.
	Token string
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
	// by it means a lost race.
	LabelPrefix string
	// Lifecycle are the lifecycle's state labels
	// (platforms.TrackerOptions.Lifecycle), which with the stage labels
	// are the labels whose move by another writer a Relabel's answer is
	// checked for (platforms.Moving); empty, every label with LabelPrefix
	// counts.
	Lifecycle []string
}

// Tracker is one GitLab project. It is safe for concurrent use.
type Tracker struct {
	api     *sdk
	repo    string
	project string
	moving  platforms.Moving
	scope   platforms.SearchScope
	log     *zap.Logger
}

var (
	_ platforms.Tracker = (*Tracker)(nil)
	_ platforms.Reactor = (*Tracker)(nil)
)

// New validates opts and builds a Tracker. It makes no network call.
func New(opts Options) (*Tracker, error) {
	if err := CheckRepo(opts.Repo); err != nil {
		return nil, fmt.Errorf("gitlab: repo %q: %w", opts.Repo, err)
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = trackerhttp.NewClientWith(trackerhttp.Options{Logger: log.Named("http"), Writer: opts.Writer, RateLimits: trackerhttp.GitLabRateLimits})
	}
	api, err := newSDK(opts.BaseURL, opts.Token, hc)
	if err != nil {
		return nil, fmt.Errorf("gitlab: base URL %q: %w", opts.BaseURL, err)
	}
	prefix := opts.LabelPrefix
	if prefix == "" {
		prefix = platforms.DefaultLabelPrefix
	}
	return &Tracker{
		api:     api,
		repo:    opts.Repo,
		project: opts.Project,
		moving:  platforms.Moving{Prefix: prefix + ":", States: slices.Clone(opts.Lifecycle)},
		scope: platforms.SearchScope{Platform: Platform, Endpoint: strings.TrimSuffix(opts.BaseURL, "/"),
			Owner: strings.ToLower(strings.SplitN(opts.Repo, "/", 2)[0]), Credential: platforms.CredentialID(opts.Token)},
		log: log.With(zap.String("platform", Platform), zap.String("repo", opts.Repo)),
	}, nil
}

// Locator is the project path the tracker is bound to; webhook events carry
// project.path_with_namespace to route a delivery to its project.
func (t *Tracker) Locator() string { return t.repo }

// CheckRepo validates a project path: at least "namespace/project", every
// segment non-empty, no "#", no surrounding slashes or spaces.
func CheckRepo(repo string) error {
	parts := strings.Split(repo, "/")
	if len(parts) < 2 {
		return fmt.Errorf(`expected "group/project" or "group/subgroup/project"`)
	}
	for _, p := range parts {
		if p == "" || strings.TrimSpace(p) != p || strings.ContainsAny(p, "#?%") {
			return fmt.Errorf(`expected "group/project" or "group/subgroup/project"`)
		}
	}
	return nil
}

// FormatID is the platform-unique ticket ID: "group/sub/project#12", with
// the issue's project-scoped iid.
func FormatID(repo string, iid int) string { return idForm.Format(repo, iid) }

// idForm is the form of GitLab ticket ids.
var idForm = platforms.NumberedID{Platform: Platform, Sep: '#', Want: "group/project#iid", CheckLocator: CheckRepo}

// ParseID is FormatID's inverse.
func ParseID(id string) (repo string, iid int, err error) { return idForm.Parse(id) }

// iid resolves ref to an issue iid in this tracker's project. GitLab paths
// are case-insensitive, so is the comparison; a ref for another project is
// refused: the token and the project belong to this one.
func (t *Tracker) iid(ref platforms.Ref) (int, error) { return idForm.Resolve(ref, t.repo) }

// Get reads the issue. Version stays empty: GitLab has no version token for
// issues.
func (t *Tracker) Get(ctx context.Context, ref platforms.Ref) (*platforms.Ticket, error) {
	n, err := t.iid(ref)
	if err != nil {
		return nil, err
	}
	is, err := t.api.getIssue(ctx, t.repo, n)
	if err != nil {
		return nil, fmt.Errorf("gitlab: get %s: %w", ref.ID, err)
	}
	return t.ticket(is), nil
}

// Relabel removes remove and adds add in one PUT that names only those
// labels (add_labels and remove_labels, each a comma-separated list: "Edit
// an issue", docs.gitlab.com/api/issues/#edit-an-issue), then checks
// GitLab's answer (the issue as written). The returned ticket lists the
// labels in the snapshot's order, the added ones last, then any label
// another writer added.
func (t *Tracker) Relabel(ctx context.Context, tk *platforms.Ticket, remove []string, add ...string) (*platforms.Ticket, error) {
	n, err := t.iid(tk.Ref)
	if err != nil {
		return nil, err
	}
	ad := platforms.LabelSet(Platform, add)
	var rm []string
	for _, l := range platforms.LabelSet(Platform, remove) {
		if !platforms.ContainsLabel(Platform, ad, l) {
			rm = append(rm, l)
		}
	}
	if len(ad) == 0 && len(rm) == 0 {
		// GitLab refuses an edit with no attribute (400); nothing to write.
		return t.Get(ctx, tk.Ref)
	}
	is, err := t.api.editLabels(ctx, t.repo, n, ad, rm)
	if err != nil {
		return nil, fmt.Errorf("gitlab: relabel %s: %w", tk.Ref.ID, err)
	}
	out := t.ticket(is)
	out.Labels = orderLike(tk.Labels, is.Labels)
	if why := platforms.LabelConflict(Platform, t.moving, tk.Labels, rm, ad, is.Labels); why != "" {
		t.log.Info("relabel raced another writer", zap.String("ticket", tk.Ref.ID), zap.String("reason", why),
			zap.Strings("labels", is.Labels))
		return nil, fmt.Errorf("gitlab: relabel %s: %s (last write wins on GitLab): %w",
			tk.Ref.ID, why, platforms.ErrPreconditionFailed)
	}
	t.log.Debug("relabelled", zap.String("ticket", tk.Ref.ID), zap.Strings("remove", remove), zap.Strings("add", ad))
	return out, nil
}

// AnswersWhole is true (platforms.WholeAnswers): Relabel's PUT answers
// with the issue as written, state, title and description included.
func (t *Tracker) AnswersWhole() bool { return true }

// orderLike orders got like snapshot: labels kept from snapshot in its
// order, then the rest in GitLab's (title) order. GitLab itself always lists
// labels sorted by title.
func orderLike(snapshot, got []string) []string {
	out := make([]string, 0, len(got))
	for _, l := range snapshot {
		if platforms.ContainsLabel(Platform, got, l) && !platforms.ContainsLabel(Platform, out, l) {
			out = append(out, l)
		}
	}
	for _, l := range got {
		if !platforms.ContainsLabel(Platform, out, l) {
			out = append(out, l)
		}
	}
	return out
}

// Comment posts body as a note on the issue.
func (t *Tracker) Comment(ctx context.Context, ref platforms.Ref, body string) error {
	n, err := t.iid(ref)
	if err != nil {
		return err
	}
	if _, err := t.api.createNote(ctx, t.repo, n, body); err != nil {
		return fmt.Errorf("gitlab: comment on %s: %w", ref.ID, err)
	}
	return nil
}

// AddComment posts body as a note and returns the note's id
// (platforms.CommentEditor).
func (t *Tracker) AddComment(ctx context.Context, ref platforms.Ref, body string) (string, error) {
	n, err := t.iid(ref)
	if err != nil {
		return "", err
	}
	id, err := t.api.createNote(ctx, t.repo, n, body)
	if err != nil {
		return "", fmt.Errorf("gitlab: comment on %s: %w", ref.ID, err)
	}
	return strconv.Itoa(id), nil
}

// EditComment replaces the body of note id on the issue.
func (t *Tracker) EditComment(ctx context.Context, ref platforms.Ref, id, body string) error {
	n, err := t.iid(ref)
	if err != nil {
		return err
	}
	nid, err := strconv.Atoi(id)
	if err != nil || nid <= 0 {
		return fmt.Errorf("gitlab: edit note %q on %s: not a note id", id, ref.ID)
	}
	if err := t.api.editNote(ctx, t.repo, n, nid, body); err != nil {
		return fmt.Errorf("gitlab: edit note %s on %s: %w", id, ref.ID, err)
	}
	return nil
}

// React awards the emoji name ("eyes") to the issue. GitLab refuses a
// second award of the same emoji by the same user with a 404 ("has already
// been taken"), which go-gitlab cannot tell from a missing issue; React is
// called right after the issue was read, so a 404 is taken as "already
// awarded" and not reported.
func (t *Tracker) React(ctx context.Context, ref platforms.Ref, name string) error {
	n, err := t.iid(ref)
	if err != nil {
		return err
	}
	if err := t.api.awardEmoji(ctx, t.repo, n, name); err != nil && !errors.Is(err, platforms.ErrNotFound) {
		return fmt.Errorf("gitlab: award %s on %s: %w", name, ref.ID, err)
	}
	return nil
}

// ListOpen lists open issues carrying label, all pages.
func (t *Tracker) ListOpen(ctx context.Context, label string) ([]*platforms.Ticket, error) {
	var out []*platforms.Ticket
	for page := 1; ; {
		list, next, err := t.api.listOpenPage(ctx, t.repo, label, page, perPage)
		if err != nil {
			return nil, fmt.Errorf("gitlab: list open issues labelled %q in %s (page %d): %w", label, t.repo, page, err)
		}
		for _, is := range list {
			out = append(out, t.ticket(is))
		}
		if next == 0 || next <= page {
			return out, nil
		}
		page = next
	}
}

func (t *Tracker) ticket(is *issue) *platforms.Ticket {
	tk := issueTicket(t.repo, is)
	tk.Ref.Project = t.project
	// The API's issue, from a read or from a PUT's answer, which is the
	// issue as written ("Edit an issue", docs.gitlab.com/api/issues/#edit-an-issue,
	// answers like "Single project issue"); a webhook's is not.
	tk.Whole = true
	return tk
}

// issueTicket converts an issue of repo; shared by the API and webhook paths.
func issueTicket(repo string, is *issue) *platforms.Ticket {
	labels := is.Labels
	if labels == nil {
		labels = []string{}
	}
	return &platforms.Ticket{
		Ref:    platforms.Ref{Platform: Platform, ID: FormatID(repo, is.IID)},
		Title:  is.Title,
		Body:   is.Description,
		URL:    is.WebURL,
		Open:   is.State == "opened",
		Labels: labels,
	}
}

// WebURL is the issue's page, {instance}/{group/project}/-/issues/{iid},
// with the instance being the API root without "api/v4/".
func (t *Tracker) WebURL(ref platforms.Ref) (string, error) {
	n, err := idForm.Resolve(ref, t.repo)
	if err != nil {
		return "", err
	}
	root := strings.TrimSuffix(t.api.baseURL(), "api/v4/")
	return root + t.repo + "/-/issues/" + strconv.Itoa(n), nil
}
