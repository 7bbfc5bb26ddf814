package gitlab

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentsmithd/agentsmithd/pkg/webhooksig"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// Webhook header names GitLab sends
// (https://docs.gitlab.com/user/project/integrations/webhooks/#delivery-headers).
const (
	HeaderEvent = "X-Gitlab-Event"
	// HeaderToken carries the webhook's secret token verbatim; GitLab does
	// not sign deliveries.
	HeaderToken = "X-Gitlab-Token"
	// HeaderIdempotencyKey is unique per delivery and kept across retries
	// (GitLab 17.4+); the preferred de-duplication id.
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderEventUUID identifies the event; the fallback de-duplication id
	// for instances older than 17.4.
	HeaderEventUUID = "X-Gitlab-Event-UUID"
	// EventIssueHook is the X-Gitlab-Event of issue (work item) events.
	EventIssueHook = "Issue Hook"
	// EventNoteHook is the X-Gitlab-Event of comment events.
	EventNoteHook = "Note Hook"
	// EventSystemHook is the X-Gitlab-Event of a self-managed instance's
	// system hooks (https://docs.gitlab.com/administration/system_hooks/).
	EventSystemHook = "System Hook"
)

// projectEvents are the system hook events that change which projects of
// a group exist or where (https://docs.gitlab.com/administration/system_hooks/):
// created, destroyed, renamed (path), transferred (namespace), and updated,
// which covers archiving ("an attribute of a project is changed"; users
// report project_update on archiving, its payload without the archived
// flag, uselagoon/lagoon#3022, so the listing that follows tells). Group
// webhooks send none of them: the events they send are listed at
// https://docs.gitlab.com/user/project/integrations/webhook_events/, and
// gitlab-org/gitlab#3003 and #326922 still ask for project events there.
var projectEvents = map[string]bool{
	"project_create": true, "project_destroy": true, "project_rename": true,
	"project_transfer": true, "project_update": true,
}

// Webhooks authenticates and parses GitLab deliveries. It holds no state:
// the secrets come per call, so a receiver can rotate them without a restart.
type Webhooks struct{}

var _ platforms.WebhookDecoder = Webhooks{}

// Verify compares X-Gitlab-Token with every secret in constant time and
// returns the index of the first that matches. Every secret is tried even
// after a match, so timing says nothing about which one it was. An empty
// token or secret never matches.
func (Webhooks) Verify(h http.Header, _ []byte, secrets [][]byte) (int, error) {
	token := []byte(h.Get(HeaderToken))
	if len(token) == 0 {
		return -1, fmt.Errorf("gitlab: %s missing: %w: %w", HeaderToken, platforms.ErrNoCredential, platforms.ErrUnauthenticated)
	}
	match := webhooksig.MatchToken(token, secrets)
	if match < 0 {
		return -1, fmt.Errorf("gitlab: %s matches no configured secret: %w", HeaderToken, platforms.ErrUnauthenticated)
	}
	return match, nil
}

// ticketActions are the issue actions after which a ticket may have become
// claimable (opened, reopened, or updated: a label change is an update) or a
// running one must be cancelled (closed, or updated without its trigger).
var ticketActions = map[string]bool{"open": true, "reopen": true, "update": true, "close": true}

// hookLabel is a label in a webhook payload.
type hookLabel struct {
	Title string `json:"title"`
}

// issueHook is the part of an Issue Hook payload the daemon reads
// (https://docs.gitlab.com/user/project/integrations/webhook_events/#work-item-events).
type issueHook struct {
	ObjectKind string `json:"object_kind"`
	Project    *struct {
		PathWithNamespace string `json:"path_with_namespace"`
	} `json:"project"`
	ObjectAttributes *struct {
		IID         int         `json:"iid"`
		Title       string      `json:"title"`
		Description string      `json:"description"`
		State       string      `json:"state"`
		Action      string      `json:"action"`
		URL         string      `json:"url"`
		Labels      []hookLabel `json:"labels"`
		UpdatedAt   string      `json:"updated_at"`
	} `json:"object_attributes"`
	Labels []hookLabel `json:"labels"`
	// User is who made the change; Changes.Labels the label sets before and
	// after an update
	// (https://docs.gitlab.com/user/project/integrations/webhook_events/#work-item-events).
	User *struct {
		Username string `json:"username"`
	} `json:"user"`
	Changes struct {
		Labels *struct {
			Previous []hookLabel `json:"previous"`
			Current  []hookLabel `json:"current"`
		} `json:"labels"`
	} `json:"changes"`
}

// titles are the labels' names.
func titles(ls []hookLabel) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		if l.Title != "" {
			out = append(out, l.Title)
		}
	}
	return out
}

// ObjectKindIssue and ObjectKindWorkItem are the object_kind values of an
// Issue Hook delivery. GitLab sends tasks, epics and every other work item
// type that is not an issue as an Issue Hook with object_kind work_item
// (https://docs.gitlab.com/user/project/integrations/webhook_events/#work-item-events);
// object_attributes.type names the type where the payload carries it,
// though epics and tasks have been seen without it (gitlab-org/gitlab#535890).
const (
	ObjectKindIssue    = "issue"
	ObjectKindWorkItem = "work_item"
	// WorkItemTypeIssue is object_attributes.type of an issue.
	WorkItemTypeIssue = "Issue"
)

// Parse decodes an authenticated delivery. Issue Hook deliveries of an
// issue with action open, reopen, update or close are EventTicket; every
// other well-formed delivery (notes, merge requests, pushes, confidential
// issues, tasks, epics and other work items, object kinds GitLab adds
// later, …) is EventIgnored, answered 2xx: GitLab disables a hook after
// four consecutive failures (gitlab-org/gitlab!166329), so an event the
// daemon does not act on must never fail. Only a body that is not the JSON
// object its X-Gitlab-Event says is ErrMalformed. It never panics, whatever
// the input.
func (Webhooks) Parse(h http.Header, body []byte) (platforms.WebhookEvent, error) {
	ev := platforms.WebhookEvent{Name: h.Get(HeaderEvent), DeliveryID: h.Get(HeaderIdempotencyKey)}
	if ev.DeliveryID == "" {
		ev.DeliveryID = h.Get(HeaderEventUUID)
	}
	if ev.Name == "" {
		return ev, fmt.Errorf("gitlab: delivery %q has no %s header: %w", ev.DeliveryID, HeaderEvent, platforms.ErrMalformed)
	}
	head, err := platforms.ParseWebhookBody(body)
	if err != nil {
		return ev, fmt.Errorf("gitlab: %s delivery %q: %w", ev.Name, ev.DeliveryID, err)
	}
	if ev.Name == EventNoteHook {
		return parseNote(ev, body)
	}
	if ev.Name == EventSystemHook {
		return systemEvent(ev, head), nil
	}
	if ev.Name != EventIssueHook {
		return ev, nil // EventIgnored
	}
	kind, attrs := head.String("object_kind"), head.Object("object_attributes")
	ev.Action = attrs.String("action")
	if !isIssue(kind, attrs.String("type")) {
		// A task, an epic (which has no project), another work item type,
		// or an object kind this code does not know.
		ev.Name += "/" + kind
		return ev, nil
	}
	var p issueHook
	if err := json.Unmarshal(body, &p); err != nil {
		return ev, fmt.Errorf("gitlab: %s delivery %q: %w: %v", ev.Name, ev.DeliveryID, platforms.ErrMalformed, err)
	}
	if p.Project == nil || CheckRepo(p.Project.PathWithNamespace) != nil {
		return ev, fmt.Errorf("gitlab: %s delivery %q: project.path_with_namespace missing or invalid: %w", ev.Name, ev.DeliveryID, platforms.ErrMalformed)
	}
	ev.Locator = p.Project.PathWithNamespace
	a := p.ObjectAttributes
	if a == nil || a.IID <= 0 {
		return ev, fmt.Errorf("gitlab: %s delivery %q: object_attributes.iid missing: %w", ev.Name, ev.DeliveryID, platforms.ErrMalformed)
	}
	if !ticketActions[a.Action] {
		ev.Kind = platforms.EventIgnored
		return ev, nil
	}
	src := a.Labels
	if src == nil {
		src = p.Labels
	}
	labels := titles(src)
	if p.User != nil {
		ev.Actor = p.User.Username
	}
	switch {
	case a.Action == "open":
		ev.Added = labels
	case p.Changes.Labels != nil:
		ev.Added = platforms.NewLabels(Platform, titles(p.Changes.Labels.Previous), titles(p.Changes.Labels.Current))
	}
	ev.Kind = platforms.EventTicket
	ev.Ticket = issueTicket(ev.Locator, &issue{IID: a.IID, Title: a.Title, Description: a.Description,
		State: a.State, WebURL: a.URL, Labels: labels})
	ev.At = platforms.ParseTime(a.UpdatedAt)
	return ev, nil
}

// isIssue reports whether an Issue Hook delivery is about an issue, the
// only work item type the daemon acts on: object_kind issue, whose type is
// Issue or absent (releases before 17.2 send no type,
// gitlab-org/gitlab!156760); or object_kind work_item of type Issue, which
// releases that built the payload from the work item sent for an issue
// edited in the new work item view (gitlab-org/gitlab#517947).
func isIssue(kind, typ string) bool {
	switch kind {
	case ObjectKindIssue:
		return typ == "" || strings.EqualFold(typ, WorkItemTypeIssue)
	case ObjectKindWorkItem:
		return strings.EqualFold(typ, WorkItemTypeIssue)
	}
	return false
}

// noteHook is the part of a Note Hook delivery on an issue the daemon reads
// (https://docs.gitlab.com/user/project/integrations/webhook_events/#comment-on-an-issue):
// the note, its author, the issue it is on.
type noteHook struct {
	Project *struct {
		PathWithNamespace string `json:"path_with_namespace"`
	} `json:"project"`
	User *struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectAttributes *struct {
		Note         string `json:"note"`
		NoteableType string `json:"noteable_type"`
		System       bool   `json:"system"`
		Action       string `json:"action"`
		CreatedAt    string `json:"created_at"`
	} `json:"object_attributes"`
	Issue *struct {
		IID   int    `json:"iid"`
		Title string `json:"title"`
		State string `json:"state"`
		URL   string `json:"url"`
	} `json:"issue"`
}

// parseNote reads a Note Hook: a person's new comment on an issue is
// EventComment. Comments on merge requests, commits and snippets, system
// notes (label changes, mentions: object_attributes.system) and edits
// (object_attributes.action "update", sent by releases that have it) are
// EventIgnored.
func parseNote(ev platforms.WebhookEvent, body []byte) (platforms.WebhookEvent, error) {
	var p noteHook
	if err := json.Unmarshal(body, &p); err != nil {
		return ev, fmt.Errorf("gitlab: %s delivery %q: %w: %v", ev.Name, ev.DeliveryID, platforms.ErrMalformed, err)
	}
	a := p.ObjectAttributes
	if a == nil || a.NoteableType != "Issue" || a.System || (a.Action != "" && a.Action != "create") {
		return ev, nil // EventIgnored
	}
	ev.Action = "create"
	if p.Project == nil || CheckRepo(p.Project.PathWithNamespace) != nil || p.Issue == nil || p.Issue.IID <= 0 {
		return ev, fmt.Errorf("gitlab: %s delivery %q: project or issue.iid missing: %w", ev.Name, ev.DeliveryID, platforms.ErrMalformed)
	}
	ev.Locator = p.Project.PathWithNamespace
	ev.Kind = platforms.EventComment
	ev.Ticket = issueTicket(ev.Locator, &issue{IID: p.Issue.IID, Title: p.Issue.Title, State: p.Issue.State, WebURL: p.Issue.URL})
	ev.Comment = platforms.CommentLine(a.Note)
	ev.At = platforms.ParseTime(a.CreatedAt)
	if p.User != nil {
		ev.Actor = p.User.Username
	}
	return ev, nil
}

// systemEvent reads a system hook delivery: a project event is
// EventRepositories, so every replica lists its GitLab groups again; any
// other (users, keys, groups, and the pushes and merge requests an
// administrator may also enable) is EventIgnored. Locator is the project's
// path as the event names it, for the log.
func systemEvent(ev platforms.WebhookEvent, head platforms.WebhookBody) platforms.WebhookEvent {
	name := head.String("event_name")
	if name == "" {
		name = head.String("object_kind")
	}
	ev.Action = name
	if !projectEvents[name] {
		return ev
	}
	ev.Kind = platforms.EventRepositories
	if p := head.String("path_with_namespace"); CheckRepo(p) == nil {
		ev.Locator = p
	}
	return ev
}
