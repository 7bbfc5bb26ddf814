// Package azuredevops is the Azure Boards implementation of
// platforms.Tracker and platforms.WebhookDecoder, on azure-devops-go-api v7.
// A ticket is a work item; its labels are the work item's tags. Lifecycle
// writes are conditional: Relabel sends a JSON Patch whose first operation
// is "test /rev" against the revision the ticket was read at, then
// "replace /fields/System.Tags" with the whole computed tag list. A write
// that raced another writer (a human editing tags between our read and our
// write) is refused with 412 (platforms.ErrPreconditionFailed): the caller
// re-reads and writes again, and the human's edit stays. "add" is not used
// to move a lifecycle tag because Azure DevOps merges an added tag list
// into the existing tags and never removes one; the answer's tags are
// checked against the list written.
package azuredevops

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/microsoft/azure-devops-go-api/azuredevops/v7/webapi"
	"github.com/microsoft/azure-devops-go-api/azuredevops/v7/workitemtracking"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Platform is the platform name in Refs and configuration.
const Platform = "azuredevops"

const (
	// DefaultBaseURL is Azure DevOps Services; an organization's URL is the
	// base URL followed by the organization name.
	DefaultBaseURL = "https://dev.azure.com/"
	// batchSize is the most work items one workitemsbatch request returns;
	// it is how Azure DevOps paginates a query's results.
	batchSize = 200
)

// Work item fields the tracker reads.
const (
	fieldTitle       = "System.Title"
	fieldDescription = "System.Description"
	fieldState       = "System.State"
	fieldTags        = "System.Tags"
	fieldProject     = "System.TeamProject"
)

// listFields are the fields ListOpen fetches per work item.
var listFields = []string{"System.Id", fieldTitle, fieldDescription, fieldState, fieldTags, fieldProject}

// closedStates are the states of the default processes (Basic, Agile,
// Scrum, CMMI) in which a work item is no longer worked on. Azure DevOps
// groups states into categories per process; WIQL cannot query a category,
// so the tracker names the states. A custom process's own closed states
// read as open.
var closedStates = []string{"Closed", "Done", "Removed", "Resolved"}

func isOpen(state string) bool { return !containsFold(closedStates, state) }

// Options configures a Tracker bound to one project.
type Options struct {
	// BaseURL is the server root the organization hangs off; "" means
	// DefaultBaseURL. For Azure DevOps Server it is the collection's parent
	// ("https://tfs.example.com/tfs/"), and Repo names the collection. The
	// emulator's is its URL + "/ado/".
	BaseURL string
	// Repo is "organization/project".
	Repo string
	// Project is the configured project name, copied into every Ref.
	Project string
	// Token is a personal access token (scope Work Items: Read & write);
	// never logged.
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
	// Spellings are the tags the daemon writes, as it spells them (the
	// lifecycle labels and the trigger label). A project keeps the spelling
	// a tag was first used in and a write in another case does not change
	// it (MicrosoftDocs/azure-devops-docs#5055), so a work item can carry
	// our tag as "Agent-Smith:done" even right after we wrote
	// "agent-smith:done". On Azure DevOps that is our tag: the tracker reads
	// it in our spelling, or the daemon would not see the state it wrote.
	Spellings []string
}

// Tracker is one Azure DevOps project. It is safe for concurrent use.
type Tracker struct {
	sdk          *sdkClient
	org, project string // as configured, for API calls
	orgURL       string
	locator      string // canonical "org/project", see Locator
	name         string // configured project name
	spellings    []string
	log          *zap.Logger
	scope        platforms.SearchScope
}

var _ platforms.Tracker = (*Tracker)(nil)

// New validates opts and builds a Tracker. It makes no network call: the
// SDK's location discovery happens on the first request.
func New(opts Options) (*Tracker, error) {
	org, project, ok := SplitRepo(opts.Repo)
	if !ok {
		return nil, fmt.Errorf("azuredevops: repo %q: want organization/project", opts.Repo)
	}
	base := opts.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("azuredevops: base URL %q: want an http(s) URL", opts.BaseURL)
	}
	orgURL := strings.TrimRight(base, "/") + "/" + url.PathEscape(org)
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = trackerhttp.NewClientWith(trackerhttp.Options{Logger: log.Named("http"), Writer: opts.Writer, RateLimits: trackerhttp.AzureDevOpsRateLimits})
	}
	loc := Locator(org, project)
	return &Tracker{
		sdk:       newSDKClient(orgURL, opts.Token, hc),
		org:       org,
		project:   project,
		orgURL:    orgURL,
		locator:   loc,
		name:      opts.Project,
		spellings: slices.Clone(opts.Spellings),
		log:       log.With(zap.String("platform", Platform), zap.String("repo", loc)),
		scope: platforms.SearchScope{Platform: Platform, Endpoint: strings.TrimRight(base, "/"), Owner: strings.ToLower(org),
			Credential: platforms.CredentialID(opts.Token)},
	}, nil
}

// SplitRepo splits "organization/project". Neither part may be empty or
// contain '/' or '#', which Azure DevOps forbids in both names.
func SplitRepo(repo string) (org, project string, ok bool) {
	org, project, ok = strings.Cut(repo, "/")
	if !ok || org == "" || project == "" || strings.ContainsAny(org, "#") || strings.ContainsAny(project, "/#") {
		return "", "", false
	}
	return org, project, true
}

// Locator is the canonical form of a project's locator, "org/project" in
// lower case. Azure DevOps organization and project names are
// case-insensitive and a service hook payload spells them as the server
// does, not as the configuration does; folding both sides makes them meet
// in the receiver's routing and in Redis keys.
func Locator(org, project string) string {
	return strings.ToLower(org) + "/" + strings.ToLower(project)
}

// Locator is the project the tracker is bound to, as Locator(org, project)
// spells it; webhook events carry the same string.
func (t *Tracker) Locator() string { return t.locator }

// FormatID is the platform-unique ticket ID: "org/project#12", with repo as
// Locator spells it.
func FormatID(repo string, id int) string { return idForm.Format(repo, id) }

// idForm is the form of Azure DevOps ticket ids.
var idForm = platforms.NumberedID{Platform: Platform, Sep: '#', Want: "org/project#id", CheckLocator: func(repo string) error {
	if _, _, ok := SplitRepo(repo); !ok {
		return fmt.Errorf("want org/project")
	}
	return nil
}}

// ParseID is FormatID's inverse.
func ParseID(id string) (repo string, workItem int, err error) { return idForm.Parse(id) }

// workItemID resolves ref to a work item id in this tracker's project. A ref
// for another project is refused: the token and the project belong to this
// one.
func (t *Tracker) workItemID(ref platforms.Ref) (int, error) { return idForm.Resolve(ref, t.locator) }

// Get reads the work item; Version is its revision number. Work item ids
// are unique in the whole organization, so an id of another project's item
// reads as ErrNotFound rather than as a ticket of this project.
func (t *Tracker) Get(ctx context.Context, ref platforms.Ref) (*platforms.Ticket, error) {
	id, err := t.workItemID(ref)
	if err != nil {
		return nil, err
	}
	c, err := t.sdk.client(ctx)
	if err != nil {
		return nil, fmt.Errorf("azuredevops: get %s: %w", ref.ID, err)
	}
	wi, err := c.GetWorkItem(ctx, workitemtracking.GetWorkItemArgs{Id: &id, Project: &t.project})
	if err != nil {
		return nil, fmt.Errorf("azuredevops: get %s: %w", ref.ID, classify(err))
	}
	tk, err := t.ticket(wi)
	if err != nil {
		return nil, fmt.Errorf("azuredevops: get %s: %w", ref.ID, err)
	}
	return tk, nil
}

// Relabel writes System.Tags computed from tk.Labels in one JSON Patch that
// first tests /rev against tk.Version: Azure DevOps applies all operations
// or none, and refuses the document with 412 when the revision moved on, so
// a human's tag edit between our read and our write is never overwritten
// (the caller re-reads and writes again). Tags in remove are removed in
// every spelling, since Azure DevOps tags are case-insensitive; every tag of
// add is in the same list, so a move of several tags is one revision. A
// ticket without a version is refused rather than written unconditionally.
//
// The tags are written with "replace" and the whole computed list: on
// Azure DevOps "add /fields/System.Tags" merges into the existing tags and
// can never remove one (see writeOp). The answer's tags are checked against
// the list written; a difference means the service did not apply our list
// as sent (another writer's change merged in), which is reported as
// platforms.ErrPreconditionFailed so the caller re-reads. The returned
// ticket is the answer's: its Version is the new revision.
func (t *Tracker) Relabel(ctx context.Context, tk *platforms.Ticket, remove []string, add ...string) (*platforms.Ticket, error) {
	id, err := t.workItemID(tk.Ref)
	if err != nil {
		return nil, err
	}
	rev, err := strconv.Atoi(tk.Version)
	if err != nil || rev <= 0 {
		return nil, fmt.Errorf("azuredevops: relabel %s: ticket has no revision (read it with Get first)", tk.Ref.ID)
	}
	add = platforms.LabelSet(Platform, add)
	for _, a := range add {
		if err := checkTag(a); err != nil {
			return nil, err
		}
	}
	want := relabel(tk.Labels, remove, add)
	if slices.Equal(want, tk.Labels) {
		// Nothing to write. Sending the same tags would create no revision
		// to return, and the transition it stands for is already there.
		out := *tk
		out.Labels = slices.Clone(tk.Labels)
		return &out, nil
	}
	doc := []webapi.JsonPatchOperation{
		{Op: ptr(webapi.OperationValues.Test), Path: ptr("/rev"), Value: rev},
		{Op: ptr(writeOp(tk.Labels)), Path: ptr("/fields/" + fieldTags), Value: joinTags(want)},
	}
	c, err := t.sdk.client(ctx)
	if err != nil {
		return nil, fmt.Errorf("azuredevops: relabel %s: %w", tk.Ref.ID, err)
	}
	wi, err := c.UpdateWorkItem(ctx, workitemtracking.UpdateWorkItemArgs{Document: &doc, Id: &id, Project: &t.project})
	if err != nil {
		return nil, fmt.Errorf("azuredevops: relabel %s at rev %d: %w", tk.Ref.ID, rev, explainRefusal(classify(err), add...))
	}
	out, err := t.ticket(wi)
	if err != nil {
		return nil, fmt.Errorf("azuredevops: relabel %s: %w", tk.Ref.ID, err)
	}
	if err := checkAnswer(rev, want, out); err != nil {
		return nil, fmt.Errorf("azuredevops: relabel %s at rev %d: %w", tk.Ref.ID, rev, err)
	}
	t.log.Debug("relabelled", zap.String("ticket", tk.Ref.ID), zap.Strings("remove", remove), zap.Strings("add", add), zap.String("rev", out.Version))
	return out, nil
}

// AnswersWhole is true (platforms.WholeAnswers): Relabel's PATCH answers
// with the work item as updated, its new rev included, and is refused
// (412) when the work item moved on from the snapshot's revision.
func (t *Tracker) AnswersWhole() bool { return true }

// writeOp is the JSON Patch operation that sets System.Tags to the computed
// list, given the tags the work item had at the tested revision.
//
// "replace" sets the whole list; "add" merges into the existing tags and
// removes nothing (bluebasher/WorkItemUpdater#87 and #92; Microsoft's CLI
// adds a tag with "add" and removes one with "replace",
// Azure/azure-devops-cli-extension work_item_tags.py). But "replace" of a
// work item without tags fails (Tiberriver256/mcp-server-azure-devops#301,
// RFC 6902 §4.3). So a work item without tags gets "add": the "test /rev"
// in the same document proves it still has none when the write applies,
// and a merge into nothing is the list itself. Everywhere else "replace".
func writeOp(had []string) webapi.Operation {
	if len(had) == 0 {
		return webapi.OperationValues.Add
	}
	return webapi.OperationValues.Replace
}

// checkAnswer verifies that the service applied the document as sent: the
// answer is a newer revision than the one tested and carries exactly the
// tags written (compared case-insensitively: the project's tag catalogue
// decides a tag's spelling). Anything else is ErrPreconditionFailed, so the
// caller re-reads the ticket and decides again from what is really there.
func checkAnswer(rev int, want []string, got *platforms.Ticket) error {
	n, _ := strconv.Atoi(got.Version)
	if n <= rev {
		return fmt.Errorf("%w: the answer is revision %s, not newer than the tested %d", platforms.ErrPreconditionFailed, got.Version, rev)
	}
	if !sameTags(want, got.Labels) {
		return fmt.Errorf("%w: the answer's tags %q are not the tags written %q (another writer's change was merged)", platforms.ErrPreconditionFailed, got.Labels, want)
	}
	return nil
}

// Comment posts body on the work item as Markdown, through the work item
// comments API (a preview API in every version the SDK knows).
func (t *Tracker) Comment(ctx context.Context, ref platforms.Ref, body string) error {
	_, err := t.AddComment(ctx, ref, body)
	return err
}

// AddComment posts body as a Markdown comment and returns its id
// (platforms.CommentEditor).
func (t *Tracker) AddComment(ctx context.Context, ref platforms.Ref, body string) (string, error) {
	id, err := t.workItemID(ref)
	if err != nil {
		return "", err
	}
	c, err := t.sdk.client(ctx)
	if err != nil {
		return "", fmt.Errorf("azuredevops: comment on %s: %w", ref.ID, err)
	}
	cm, err := c.AddWorkItemComment(ctx, workitemtracking.AddWorkItemCommentArgs{
		Request:    &workitemtracking.CommentCreate{Text: &body},
		Project:    &t.project,
		WorkItemId: &id,
		Format:     ptr(workitemtracking.CommentFormatValues.Markdown),
	})
	if err != nil {
		return "", fmt.Errorf("azuredevops: comment on %s: %w", ref.ID, classify(err))
	}
	if cm == nil || cm.Id == nil {
		return "", fmt.Errorf("azuredevops: comment on %s: the answer carries no comment id", ref.ID)
	}
	return strconv.Itoa(*cm.Id), nil
}

// EditComment replaces the text of comment id, as Markdown (Comments -
// Update Work Item Comment, a preview API like Add).
func (t *Tracker) EditComment(ctx context.Context, ref platforms.Ref, id, body string) error {
	wid, err := t.workItemID(ref)
	if err != nil {
		return err
	}
	cid, err := strconv.Atoi(id)
	if err != nil || cid <= 0 {
		return fmt.Errorf("azuredevops: edit comment %q on %s: not a comment id", id, ref.ID)
	}
	c, err := t.sdk.client(ctx)
	if err != nil {
		return fmt.Errorf("azuredevops: edit comment on %s: %w", ref.ID, err)
	}
	_, err = c.UpdateWorkItemComment(ctx, workitemtracking.UpdateWorkItemCommentArgs{
		Request:    &workitemtracking.CommentUpdate{Text: &body},
		Project:    &t.project,
		WorkItemId: &wid,
		CommentId:  &cid,
		Format:     ptr(workitemtracking.CommentFormatValues.Markdown),
	})
	if err != nil {
		return fmt.Errorf("azuredevops: edit comment %s on %s: %w", id, ref.ID, classify(err))
	}
	return nil
}

// ListQuery is the WIQL ListOpen sends for label: the project's work items
// carrying the tag and not in a closed state. Exported so the emulator and
// tests agree with the tracker on the exact text.
func ListQuery(label string) string {
	states := make([]string, len(closedStates))
	for i, s := range closedStates {
		states[i] = wiqlString(s)
	}
	return "SELECT [System.Id] FROM WorkItems WHERE [System.TeamProject] = @project" +
		" AND [System.Tags] CONTAINS " + wiqlString(label) +
		" AND [System.State] NOT IN (" + strings.Join(states, ", ") + ")" +
		" ORDER BY [System.Id]"
}

// wiqlString quotes s as a WIQL string literal.
func wiqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// ListOpen lists the project's open work items tagged label. A WIQL query
// returns the ids (Azure DevOps caps it at 20,000), and the items are read
// in batches of 200, which is how the API paginates. Work items deleted
// between the two steps are skipped. Each ticket carries its revision, so
// it can be relabelled without another read.
func (t *Tracker) ListOpen(ctx context.Context, label string) ([]*platforms.Ticket, error) {
	items, err := t.queryItems(ctx, ListQuery(label), &t.project)
	if err != nil {
		return nil, fmt.Errorf("azuredevops: list open work items tagged %q in %s: %w", label, t.locator, err)
	}
	out := make([]*platforms.Ticket, 0, len(items))
	for i := range items {
		tk, err := t.ticket(&items[i])
		if err != nil {
			return nil, fmt.Errorf("azuredevops: list open work items tagged %q in %s: %w", label, t.locator, err)
		}
		out = append(out, tk)
	}
	return out, nil
}

// queryItems runs a WIQL query in project (nil: the whole organisation)
// and reads the work items it names with listFields in batches of
// batchSize, which is how the API paginates; items deleted between the two
// steps are left out.
func (t *Tracker) queryItems(ctx context.Context, q string, project *string) ([]workitemtracking.WorkItem, error) {
	c, err := t.sdk.client(ctx)
	if err != nil {
		return nil, err
	}
	res, err := c.QueryByWiql(ctx, workitemtracking.QueryByWiqlArgs{Wiql: &workitemtracking.Wiql{Query: &q}, Project: project})
	if err != nil {
		return nil, fmt.Errorf("query: %w", classify(err))
	}
	var ids []int
	if res.WorkItems != nil {
		for _, r := range *res.WorkItems {
			if r.Id != nil {
				ids = append(ids, *r.Id)
			}
		}
	}
	var out []workitemtracking.WorkItem
	fields := listFields
	for start := 0; start < len(ids); start += batchSize {
		chunk := ids[start:min(start+batchSize, len(ids))]
		items, err := c.GetWorkItemsBatch(ctx, workitemtracking.GetWorkItemsBatchArgs{
			WorkItemGetRequest: &workitemtracking.WorkItemBatchGetRequest{
				Ids:         &chunk,
				Fields:      &fields,
				ErrorPolicy: ptr(workitemtracking.WorkItemErrorPolicyValues.Omit),
			},
			Project: project,
		})
		if err != nil {
			return nil, fmt.Errorf("batch at %d: %w", start, classify(err))
		}
		if items == nil {
			continue
		}
		for _, wi := range *items {
			if wi.Id != nil { // nil: omitted, deleted since the query
				out = append(out, wi)
			}
		}
	}
	return out, nil
}

// ticket converts a work item of this project. An item of another project
// is ErrNotFound (see Get).
func (t *Tracker) ticket(wi *workitemtracking.WorkItem) (*platforms.Ticket, error) {
	if wi == nil || wi.Id == nil || wi.Rev == nil {
		return nil, fmt.Errorf("work item without id or rev in the response")
	}
	f := map[string]any{}
	if wi.Fields != nil {
		f = *wi.Fields
	}
	if p := stringField(f, fieldProject); p != "" && !strings.EqualFold(p, t.project) {
		return nil, fmt.Errorf("work item %d is in project %q: %w", *wi.Id, p, platforms.ErrNotFound)
	}
	return t.ticketIn(wi, f, t.project, t.locator, t.name), nil
}

// ticketIn converts a work item of project (locator its canonical
// "org/project"), as configured project name shows it ("" for a search hit
// whose project the caller resolves).
func (t *Tracker) ticketIn(wi *workitemtracking.WorkItem, f map[string]any, project, locator, name string) *platforms.Ticket {
	return &platforms.Ticket{
		Ref:     platforms.Ref{Platform: Platform, Project: name, ID: FormatID(locator, *wi.Id)},
		Title:   stringField(f, fieldTitle),
		Body:    stringField(f, fieldDescription),
		URL:     EditURL(t.orgURL, project, *wi.Id),
		Open:    isOpen(stringField(f, fieldState)),
		Labels:  respell(splitTags(stringField(f, fieldTags)), t.spellings),
		Version: strconv.Itoa(*wi.Rev),
		// A read's work item, or an update's: "Work Items - Update" answers
		// with the WorkItem as updated, every field and its new rev
		// (learn.microsoft.com/rest/api/azure/devops/wit/work-items/update).
		Whole: true,
	}
}

// EditURL is the web page of a work item: {org URL}/{project}/_workitems/edit/{id}.
func EditURL(orgURL, project string, id int) string {
	return strings.TrimRight(orgURL, "/") + "/" + url.PathEscape(project) + "/_workitems/edit/" + strconv.Itoa(id)
}

func stringField(f map[string]any, name string) string {
	s, _ := f[name].(string)
	return s
}

func ptr[T any](v T) *T { return &v }

// WebURL is the work item's edit page (EditURL).
func (t *Tracker) WebURL(ref platforms.Ref) (string, error) {
	n, err := idForm.Resolve(ref, t.locator)
	if err != nil {
		return "", err
	}
	return EditURL(t.orgURL, t.project, n), nil
}
