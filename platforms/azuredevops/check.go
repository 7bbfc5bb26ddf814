package azuredevops

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/microsoft/azure-devops-go-api/azuredevops/v7/workitemtracking"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.Checker = (*Tracker)(nil)

const hooksWhere = "Project settings → Service hooks (Web Hooks)"

// hookEvents are the subscriptions' event types a hook URL must have
// (https://learn.microsoft.com/azure/devops/service-hooks/events);
// hookCommentEvent ("Work item commented on") carries comment commands and
// `/agent-smith approve`, needed while commands.enabled.
var hookEvents = []string{"workitem.created", "workitem.updated"}

const hookCommentEvent = EventWorkItemCommented

// Check verifies, with GETs only, what it can: who the PAT is
// (connectionData), that the project exists, and, where the PAT may see
// them, that service hook subscriptions send work item created and
// updated here. The three organisation-level resources are read with plain
// GETs on the tracker's client and the PAT's header: the SDK would first
// discover each one's area through OPTIONS and ResourceAreas.
//
// The lifecycle tags must exist in the project or the identity must be
// allowed to create them (checkLifecycleTags).
//
// Work item write permission is not checked: Azure DevOps reports it only
// through the Security namespaces API per area path ("Edit work items in
// this node"), and a PAT's scopes (Work Items: Read & write) through no
// API a PAT with that scope may call; only a write would prove it.
func (t *Tracker) Check(ctx context.Context, opts platforms.CheckOptions) []platforms.CheckResult {
	var out []platforms.CheckResult
	// GET _apis/connectionData, what the SDK's location.GetConnectionData calls
	// (api-version 7.1-preview.1, azure-devops-go-api location/client.go).
	var cd struct {
		AuthenticatedUser struct {
			ProviderDisplayName string `json:"providerDisplayName"`
			Properties          struct {
				Account struct {
					Value string `json:"$value"`
				} `json:"Account"`
			} `json:"properties"`
		} `json:"authenticatedUser"`
	}
	if code, err := t.getJSON(ctx, "_apis/connectionData?api-version=7.1-preview.1", &cd); err != nil {
		return append(out, platforms.HTTPFailure("auth", code, err, platforms.Fixes{
			Unauthorized: "the PAT is wrong, expired or revoked, or not valid for this organization: create one and update token_env/token_file",
			NotFound:     "base_url or the organization in repo is wrong"}))
	}
	u := cd.AuthenticatedUser
	out = append(out, platforms.OK("auth", "user %s (%s)", u.ProviderDisplayName, u.Properties.Account.Value))
	// https://learn.microsoft.com/rest/api/azure/devops/core/projects/get
	var proj struct {
		ID    string `json:"id"`
		Name  string `json:"name"`
		State string `json:"state"`
	}
	if code, err := t.getJSON(ctx, "_apis/projects/"+url.PathEscape(t.project)+"?api-version=7.1", &proj); err != nil {
		return append(out, platforms.HTTPFailure("repository", code, err, platforms.Fixes{
			NotFound: "project " + t.project + " does not exist in " + t.org + " or the PAT's user is not a member"}))
	}
	out = append(out, platforms.OK("repository", "%s (%s)", proj.Name, proj.State))
	out = append(out, platforms.Warn("permissions", "work item write permission cannot be read without writing",
		"give the PAT the Work Items (Read & write) scope; its user needs Edit work items on the project's area path"))
	out = append(out, platforms.OK("trigger label", "%q: added by people, not by the daemon", opts.TriggerLabel))
	if len(opts.LifecycleLabels) > 0 {
		out = append(out, t.checkLifecycleTags(ctx, proj.ID, opts.LifecycleLabels))
	}
	if !opts.Webhooks {
		return append(out, platforms.PollingOnly())
	}
	return append(out, t.checkSubscriptions(ctx, proj.ID, opts))
}

// checkLifecycleTags verifies that the daemon can write its lifecycle
// tags. Adding a tag the project does not define creates it, and creating
// one takes Basic access and the project permission "Create tag
// definition": an identity without them (a Stakeholder, a common licence
// for automation accounts) may add existing tags only, and its claims are
// refused with TF401289 (refusals.go). So it passes when the project
// defines all of them (Tags - List, GET {project}/_apis/wit/tags as the
// SDK's GetTags sends it,
// https://learn.microsoft.com/rest/api/azure/devops/wit/tags/list), or
// when Permissions - Has Permissions says the PAT's identity holds the
// Tagging namespace's Create bit on the project (namespace and token from
// docs/organizations/security/namespace-reference.md). Whether that
// evaluation reflects a Stakeholder access level is not documented; a
// claim refused anyway is told on the ticket with the same fix.
func (t *Tracker) checkLifecycleTags(ctx context.Context, projectID string, tags []string) platforms.CheckResult {
	const name = "lifecycle tags"
	// A plain GET, as for the other reads here: the SDK's GetTags would
	// first discover the work item tracking area.
	var defs struct {
		Value []workitemtracking.WorkItemTagDefinition `json:"value"`
	}
	if code, err := t.getJSON(ctx, url.PathEscape(t.project)+"/_apis/wit/tags?api-version=7.1-preview.1", &defs); err != nil {
		return platforms.HTTPFailure(name, code, err, platforms.Fixes{
			Unauthorized: "the PAT is wrong, expired or revoked", Forbidden: "give the PAT the Work Items (Read & write) scope",
			NotFound: "the project's tags cannot be listed: check base_url and repo"})
	}
	var missing []string
	for _, tag := range tags {
		defined := slices.ContainsFunc(defs.Value, func(d workitemtracking.WorkItemTagDefinition) bool {
			return d.Name != nil && platforms.SameLabel(Platform, *d.Name, tag)
		})
		if !defined {
			missing = append(missing, tag)
		}
	}
	if len(missing) == 0 {
		return platforms.OK(name, "all %d defined in the project", len(tags))
	}
	may, why := t.mayCreateTags(ctx, projectID)
	if may {
		return platforms.OK(name, "%d not defined yet (%s); the PAT's identity may create them (%s)",
			len(missing), strings.Join(missing, ", "), why)
	}
	return platforms.Fail(name, fmt.Sprintf("not defined in the project: %s; and the PAT's identity may not create tags (%s)",
		strings.Join(missing, ", "), why), TagsFix)
}

// taggingNamespace is the Tagging security namespace; bit 2 is Create
// ("Create tag definition"), its token for a project "/{projectId}".
const (
	taggingNamespace = "bb50f182-8e5e-40b8-bc21-e8752a1e7ae2"
	taggingCreate    = 2
)

// mayCreateTags asks Permissions - Has Permissions (GET
// _apis/permissions/{namespace}/{bits}?tokens=..., what the SDK's
// security.HasPermissions calls: "Evaluates whether the caller has the
// specified permissions") whether the PAT's identity may create tags in
// the project, and says how it knows. An answer that cannot be read is
// a no: check then insists on the tags existing.
func (t *Tracker) mayCreateTags(ctx context.Context, projectID string) (bool, string) {
	var ans struct {
		Value []bool `json:"value"`
	}
	q := url.Values{"tokens": {"/" + projectID}, "api-version": {"7.1"}}
	path := fmt.Sprintf("_apis/permissions/%s/%d?%s", taggingNamespace, taggingCreate, q.Encode())
	code, err := t.getJSON(ctx, path, &ans)
	switch {
	case err != nil && code != 0:
		return false, fmt.Sprintf("Create tag definition could not be read: HTTP %d", code)
	case err != nil:
		return false, "Create tag definition could not be read: no answer"
	case len(ans.Value) != 1:
		return false, "Create tag definition could not be read: unexpected answer"
	case ans.Value[0]:
		return true, "Create tag definition: allowed"
	}
	return false, "Create tag definition: not allowed"
}

// checkSubscriptions lists service hook subscriptions
// (https://learn.microsoft.com/rest/api/azure/devops/hooks/subscriptions/list),
// keeps the Web Hooks ones of this project, and folds those pointing at one
// URL into one hook whose events are their event types.
func (t *Tracker) checkSubscriptions(ctx context.Context, projectID string, opts platforms.CheckOptions) platforms.CheckResult {
	subs, code, err := t.subscriptions(ctx)
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return platforms.HooksHidden(Platform, hooksWhere, opts, hookEvents, hookCommentEvent)
	case err != nil:
		return platforms.HTTPFailure("webhook", code, err, platforms.Fixes{})
	}
	byURL := map[string]*platforms.Hook{}
	var order []string
	for _, s := range subs {
		if s.ConsumerID != "webHooks" || (s.PublisherInputs["projectId"] != "" && s.PublisherInputs["projectId"] != projectID) {
			continue
		}
		u := s.ConsumerInputs["url"]
		h := byURL[u]
		if h == nil {
			h = &platforms.Hook{URL: u, Active: true}
			byURL[u] = h
			order = append(order, u)
		}
		if s.Status != "enabled" && s.Status != "onProbation" {
			continue // a disabled subscription sends nothing
		}
		if !slices.Contains(h.Events, s.EventType) {
			h.Events = append(h.Events, s.EventType)
		}
	}
	hooks := make([]platforms.Hook, 0, len(order))
	for _, u := range order {
		hooks = append(hooks, *byURL[u])
	}
	return platforms.CheckHooks(hooks, Platform, opts, hookEvents, hookCommentEvent, hooksWhere)
}

// subscription is a service hook subscription as the list returns it
// (https://learn.microsoft.com/rest/api/azure/devops/hooks/subscriptions/list);
// confidential consumer inputs (a basic-auth password) come masked.
type subscription struct {
	ID               string            `json:"id"`
	EventType        string            `json:"eventType"`
	PublisherID      string            `json:"publisherId"`
	ConsumerID       string            `json:"consumerId"`
	ConsumerActionID string            `json:"consumerActionId"`
	Status           string            `json:"status"`
	PublisherInputs  map[string]string `json:"publisherInputs"`
	ConsumerInputs   map[string]string `json:"consumerInputs"`
}

// subscriptions lists the organization's service hook subscriptions and
// returns the answer's status.
func (t *Tracker) subscriptions(ctx context.Context) ([]subscription, int, error) {
	var subs struct {
		Value []subscription `json:"value"`
	}
	code, err := t.getJSON(ctx, "_apis/hooks/subscriptions?api-version=7.1", &subs)
	return subs.Value, code, err
}

// getJSON GETs {organization URL}/path with the PAT into v and returns the
// answer's status (0 when none came).
func (t *Tracker) getJSON(ctx context.Context, path string, v any) (int, error) {
	return t.getJSONAt(ctx, t.orgURL+"/"+path, v)
}

// getJSONAt is getJSON for a full URL (another host of the organization).
func (t *Tracker) getJSONAt(ctx context.Context, u string, v any) (int, error) {
	code, _, err := getJSON(ctx, t.sdk.hc, u, t.sdk.conn.AuthorizationString, v)
	return code, err
}
