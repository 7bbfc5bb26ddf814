package azuredevops

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentsmithd/agentsmithd/pkg/webhooksig"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// Azure DevOps service hooks ("Web Hooks" consumer) sign nothing. A
// subscription can send HTTP basic authentication and custom HTTP headers
// with every delivery; the daemon uses the basic-auth password, and
// optionally a header, as the shared secret.
//
// Payload: https://learn.microsoft.com/azure/devops/service-hooks/events
// (workitem.created: resource is the work item; workitem.updated: resource
// is the update, resource.fields the changed fields as {oldValue, newValue},
// resource.revision the whole work item after the update).

// DefaultSecretHeader is the custom header Webhooks reads a secret from
// when Webhooks.Header is empty. Configure it in the subscription's "HTTP
// headers" box as "X-Agentsmith-Secret: <secret>".
const DefaultSecretHeader = "X-Agentsmith-Secret"

// Event types the daemon handles.
const (
	EventWorkItemCreated = "workitem.created"
	EventWorkItemUpdated = "workitem.updated"
	// EventWorkItemCommented is a new comment; its resource is the work
	// item with the comment in System.History and its author in
	// System.AuthorizedAs (System.ChangedBy, which bypass-rules updates
	// can write, only where AuthorizedAs is absent)
	// (https://learn.microsoft.com/en-us/azure/devops/service-hooks/events#workitem.commented).
	EventWorkItemCommented = "workitem.commented"
)

// Webhooks authenticates and parses service hook deliveries. The zero value
// accepts any basic-auth user name and reads DefaultSecretHeader.
type Webhooks struct {
	// Spellings are the daemon's lifecycle tags as it spells them; a
	// payload's tags are read in these spellings, as the tracker reads
	// them (platforms.Respell).
	Spellings []string
	// Username, when set, must be the basic-auth user name of a delivery
	// that authenticates with basic auth.
	Username string
	// Header names the custom header carrying a secret; "" means
	// DefaultSecretHeader.
	Header string
}

var _ platforms.WebhookDecoder = Webhooks{}

// BasicAuth is the Authorization header value a subscription with user name
// user and password secret sends, for senders (the emulator, tests).
func BasicAuth(user, secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+secret))
}

// Verify authenticates a delivery by its basic-auth password and/or its
// secret header. Each credential the delivery presents must match one of
// secrets, and at least one must be present; the index returned is that of
// the password's match, else the header's. Every secret is compared in
// constant time, even after a match.
func (w Webhooks) Verify(h http.Header, _ []byte, secrets [][]byte) (int, error) {
	user, pass, hasBasic := (&http.Request{Header: h}).BasicAuth()
	hasBasic = hasBasic && pass != ""
	header := w.Header
	if header == "" {
		header = DefaultSecretHeader
	}
	hv := h.Get(header)
	if !hasBasic && hv == "" {
		return -1, fmt.Errorf("azuredevops: no basic-auth password and no %s header: %w: %w", header, platforms.ErrNoCredential, platforms.ErrUnauthenticated)
	}
	idx := -1
	if hasBasic {
		userOK := w.Username == "" || subtle.ConstantTimeCompare([]byte(user), []byte(w.Username)) == 1
		i := webhooksig.MatchToken([]byte(pass), secrets)
		if i < 0 || !userOK {
			return -1, fmt.Errorf("azuredevops: basic auth matches no configured secret: %w", platforms.ErrUnauthenticated)
		}
		idx = i
	}
	if hv != "" {
		i := webhooksig.MatchToken([]byte(hv), secrets)
		if i < 0 {
			return -1, fmt.Errorf("azuredevops: %s matches no configured secret: %w", header, platforms.ErrUnauthenticated)
		}
		if idx < 0 {
			idx = i
		}
	}
	return idx, nil
}

// envelope is the part of every service hook payload Parse reads.
type envelope struct {
	ID                 string          `json:"id"`
	SubscriptionID     string          `json:"subscriptionId"`
	NotificationID     json.Number     `json:"notificationId"`
	EventType          string          `json:"eventType"`
	CreatedDate        string          `json:"createdDate"`
	Resource           json.RawMessage `json:"resource"`
	ResourceContainers struct {
		Collection container `json:"collection"`
		Account    container `json:"account"`
		Project    container `json:"project"`
	} `json:"resourceContainers"`
}

type container struct {
	ID      string `json:"id"`
	BaseURL string `json:"baseUrl"`
}

// workItem is a work item as a payload carries it: the resource of
// workitem.created, the revision of workitem.updated.
type workItem struct {
	ID     int                        `json:"id"`
	Rev    int                        `json:"rev"`
	Fields map[string]json.RawMessage `json:"fields"`
	URL    string                     `json:"url"`
	Links  struct {
		HTML struct {
			Href string `json:"href"`
		} `json:"html"`
	} `json:"_links"`
}

// update is the resource of workitem.updated.
type update struct {
	WorkItemID int                        `json:"workItemId"`
	RevisedBy  *identity                  `json:"revisedBy"`
	Fields     map[string]json.RawMessage `json:"fields"`
	URL        string                     `json:"url"`
	Revision   *workItem                  `json:"revision"`
}

// ticketFields are the fields whose change may make a work item claimable
// (the trigger tag added, reopened, edited), like GitHub's labeled,
// reopened and edited actions. An update changing none of them (assignment,
// a comment, our own board moves) is ignored.
var ticketFields = []string{fieldTags, fieldState, fieldTitle, fieldDescription}

// nilGUID is the id of the documentation's sample payloads and of the
// portal's "Test" deliveries.
const nilGUID = "00000000-0000-0000-0000-000000000000"

// Parse decodes an authenticated delivery (parse says how) and reads the
// ticket's labels in the daemon's spelling (Spellings), as the tracker
// reads them.
func (w Webhooks) Parse(h http.Header, body []byte) (platforms.WebhookEvent, error) {
	ev, err := w.parse(h, body)
	ev.RespellTicket(w.Spellings)
	return ev, err
}

// parse is Parse before the labels are respelled. workitem.created and
// workitem.updated events that touch ticketFields are EventTicket; every
// other well-formed delivery is EventIgnored, answered 2xx, so a
// subscription is never put on probation for an event the daemon does not
// act on: other event types, updates of other fields, and work item events
// sent without the work item (a subscription whose "Resource details to
// send" is Minimal or None; Reason says so). Only a body that is not a
// JSON object, or a work item event the daemon acts on whose fields are
// not what Azure DevOps documents, is ErrMalformed. Azure DevOps has no
// ping event: the portal's "Test" button sends a sample of the subscribed
// event. It never panics, whatever the input.
func (Webhooks) parse(_ http.Header, body []byte) (platforms.WebhookEvent, error) {
	var ev platforms.WebhookEvent
	head, err := platforms.ParseWebhookBody(body)
	if err != nil {
		return ev, fmt.Errorf("azuredevops: delivery: %w", err)
	}
	var p envelope
	if err := json.Unmarshal(body, &p); err != nil {
		// An envelope member of another type: identify the delivery by
		// its digest and read on from the members that did parse.
		p = envelope{EventType: head.String("eventType"), Resource: head["resource"]}
	}
	ev.DeliveryID = deliveryID(p, body)
	ev.At = platforms.ParseTime(p.CreatedDate)
	ev.Name, ev.Action, _ = strings.Cut(p.EventType, ".")
	var wi *workItem
	var up *update
	workItemEvent := p.EventType == EventWorkItemCreated || p.EventType == EventWorkItemUpdated || p.EventType == EventWorkItemCommented
	if workItemEvent && head.Has("resource") && head.Object("resource") == nil {
		return ev, malformed(ev, "resource is not an object", nil)
	}
	switch p.EventType {
	case EventWorkItemCreated, EventWorkItemCommented:
		if head.Object("resource").Has("fields") {
			if err := json.Unmarshal(p.Resource, &wi); err != nil || wi == nil {
				return ev, malformed(ev, "resource is not a work item", err)
			}
		}
	case EventWorkItemUpdated:
		u := head.Object("resource")
		if !u.Has("revision") {
			break
		}
		if !slices.ContainsFunc(ticketFields, u.Object("fields").Has) {
			ev.Reason = "no change to tags, state, title or description"
			return ev, nil // EventIgnored
		}
		if err := json.Unmarshal(p.Resource, &up); err != nil || up == nil || up.Revision == nil {
			return ev, malformed(ev, "resource is not a work item update with a revision", err)
		}
		wi = up.Revision
		if wi.ID == 0 {
			wi.ID = up.WorkItemID
		}
	default:
		return ev, nil // EventIgnored
	}
	if wi == nil {
		ev.Reason = "the delivery carries no work item: set the subscription's resource details to send to All"
		return ev, nil // EventIgnored
	}
	f := map[string]string{}
	for _, name := range []string{fieldTitle, fieldDescription, fieldState, fieldTags, fieldProject} {
		raw, ok := wi.Fields[name]
		if !ok || string(raw) == "null" {
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return ev, malformed(ev, "field "+name+" is not a string", err)
		}
		f[name] = s
	}
	project := f[fieldProject]
	orgURL, org := organization(p, wi, project)
	if _, _, ok := SplitRepo(org + "/" + project); !ok {
		return ev, malformed(ev, fmt.Sprintf("cannot tell the organization/project (%q/%q)", org, project), nil)
	}
	ev.Locator = Locator(org, project)
	ev.Kind = platforms.EventTicket
	ev.Ticket = &platforms.Ticket{
		Ref:    platforms.Ref{Platform: Platform, ID: FormatID(ev.Locator, wi.ID)},
		Title:  f[fieldTitle],
		Body:   f[fieldDescription],
		URL:    EditURL(orgURL, project, wi.ID),
		Open:   isOpen(f[fieldState]),
		Labels: splitTags(f[fieldTags]),
	}
	if wi.Rev > 0 {
		ev.Ticket.Version = strconv.Itoa(wi.Rev)
	}
	if p.EventType == EventWorkItemCommented {
		ev.Kind = platforms.EventComment
		ev.Actor = commentActor(wi)
		var history string
		_ = json.Unmarshal(wi.Fields[fieldHistory], &history)
		ev.Comment = platforms.CommentLine(htmlText(history))
		return ev, nil
	}
	ev.Actor, ev.Added = changeActor(wi, up, ev.Ticket.Labels)
	return ev, nil
}

// Fields of a workitem.commented resource, and who made a change.
const (
	fieldHistory   = "System.History"
	fieldChangedBy = "System.ChangedBy"
	// fieldAuthorizedAs is the identity that authenticated a change. The
	// service sets it; System.ChangedBy (and revisedBy, which shows it) an
	// update made with bypassRules=true may write, naming anyone
	// (tfsaggregator/aggregator-cli#62, microsoft/mail2bug#30: an
	// integration account with "Bypass rules on work item updates" sets
	// ChangedBy to the person it acts for). Who decides is read from
	// AuthorizedAs wherever a payload carries it.
	fieldAuthorizedAs = "System.AuthorizedAs"
)

// commentActor is the author of a workitem.commented delivery: the
// comment's revision's System.AuthorizedAs, else (a payload without it)
// its System.ChangedBy. The payload carries no Comment resource, so the
// comment's createdBy is not there to read.
func commentActor(wi *workItem) string {
	if who := identityName(wi.Fields[fieldAuthorizedAs]); who != "" {
		return who
	}
	return identityName(wi.Fields[fieldChangedBy])
}

// htmlBreak matches the tags Azure DevOps' comment editor ends a line with.
var htmlBreak = regexp.MustCompile(`(?i)<br\s*/?>|</(div|p|li|h[1-6])>`)

// htmlTag matches any other tag.
var htmlTag = regexp.MustCompile(`<[^>]*>`)

// htmlText is the text of a comment as Azure DevOps stores it (HTML:
// "<div>/agent-smith retry</div>"): line-ending tags become line breaks,
// other tags go, entities are decoded. Enough to read a command on the
// first line; nothing here is rendered again.
func htmlText(s string) string {
	s = htmlBreak.ReplaceAllString(s, "\n")
	s = htmlTag.ReplaceAllString(s, "")
	return strings.ReplaceAll(html.UnescapeString(s), "\u00a0", " ")
}

func malformed(ev platforms.WebhookEvent, what string, err error) error {
	if err != nil {
		return fmt.Errorf("azuredevops: %s/%s delivery %q: %s: %w: %v", ev.Name, ev.Action, ev.DeliveryID, what, platforms.ErrMalformed, err)
	}
	return fmt.Errorf("azuredevops: %s/%s delivery %q: %s: %w", ev.Name, ev.Action, ev.DeliveryID, what, platforms.ErrMalformed)
}

// deliveryID de-duplicates deliveries: the event's id, which a retry of the
// same notification repeats. Sample payloads carry the nil GUID; they fall
// back to subscription and notification ids, and as a last resort to a
// digest of the body, so a resent identical body is still a duplicate.
func deliveryID(p envelope, body []byte) string {
	if p.ID != "" && p.ID != nilGUID {
		return p.ID
	}
	if p.SubscriptionID != "" && p.NotificationID != "" {
		return p.SubscriptionID + "/" + p.NotificationID.String()
	}
	sum := sha256.Sum256(body)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// organization finds the organization (the collection on Azure DevOps
// Server) and its URL: from resourceContainers' baseUrl where the payload
// has one, else from the work item's REST URL, whose path ends in
// "{org}[/{project}]/_apis/wit/...". Old *.visualstudio.com URLs name the
// organization in the host.
func organization(p envelope, wi *workItem, project string) (orgURL, org string) {
	for _, c := range []container{p.ResourceContainers.Collection, p.ResourceContainers.Account} {
		if u, err := url.Parse(c.BaseURL); err == nil && c.BaseURL != "" {
			segs := pathSegments(u.Path)
			if len(segs) > 0 {
				u.Path, u.RawPath = "/"+strings.Join(segs, "/"), ""
				return strings.TrimRight(u.String(), "/"), segs[len(segs)-1]
			}
			if org, ok := vsHost(u.Host); ok {
				return u.Scheme + "://" + u.Host, org
			}
		}
	}
	for _, raw := range []string{wi.URL, wi.Links.HTML.Href} {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			continue
		}
		segs := pathSegments(u.Path)
		end := -1
		for i, s := range segs {
			if s == "_apis" || s == "_workitems" {
				end = i
				break
			}
		}
		if end < 0 {
			continue
		}
		segs = segs[:end]
		// Drop a project segment (name or id) before the API path.
		if n := len(segs); n > 0 && (strings.EqualFold(segs[n-1], project) || strings.EqualFold(segs[n-1], p.ResourceContainers.Project.ID)) {
			segs = segs[:n-1]
		}
		if len(segs) > 0 {
			u.Path, u.RawPath, u.RawQuery, u.Fragment = "/"+strings.Join(segs, "/"), "", "", ""
			return u.String(), segs[len(segs)-1]
		}
		if org, ok := vsHost(u.Host); ok {
			return u.Scheme + "://" + u.Host, org
		}
	}
	return "", ""
}

// vsHost reads the organization from a legacy {org}.visualstudio.com host.
func vsHost(host string) (string, bool) {
	org, ok := strings.CutSuffix(strings.ToLower(host), ".visualstudio.com")
	return org, ok && org != "" && !strings.Contains(org, ".")
}

// pathSegments splits an URL path into its unescaped non-empty segments.
func pathSegments(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// identity is an IdentityRef as service hooks send it.
type identity struct {
	UniqueName string `json:"uniqueName"`
}

// changeActor is who made the change and the tags it added: on
// workitem.updated System.AuthorizedAs (authorizedAs), else the update's
// revisedBy, and the difference of System.Tags' oldValue and newValue
// (https://learn.microsoft.com/azure/devops/service-hooks/events#workitem.updated);
// on workitem.created System.AuthorizedAs, else the work item's
// System.CreatedBy, and every tag.
// System.CreatedBy is an IdentityRef on current payloads and "Name
// <unique name>" on the documentation's older samples; both are read.
func changeActor(wi *workItem, up *update, tags []string) (string, []string) {
	if up == nil {
		if who := identityName(wi.Fields[fieldAuthorizedAs]); who != "" {
			return who, tags
		}
		return identityName(wi.Fields["System.CreatedBy"]), tags
	}
	var tagChange struct {
		OldValue string `json:"oldValue"`
		NewValue string `json:"newValue"`
	}
	var added []string
	if raw, ok := up.Fields[fieldTags]; ok && json.Unmarshal(raw, &tagChange) == nil {
		added = platforms.NewLabels(Platform, splitTags(tagChange.OldValue), splitTags(tagChange.NewValue))
	}
	if who := authorizedAs(up); who != "" {
		return who, added
	}
	if up.RevisedBy == nil {
		return "", added
	}
	return up.RevisedBy.UniqueName, added
}

// authorizedAs is who authenticated a workitem.updated change: the new
// System.AuthorizedAs where the update changed it, else the revision's
// (the same identity made the previous change too); "" when the payload
// carries neither.
func authorizedAs(up *update) string {
	var ch struct {
		NewValue json.RawMessage `json:"newValue"`
	}
	if raw, ok := up.Fields[fieldAuthorizedAs]; ok && json.Unmarshal(raw, &ch) == nil {
		if who := identityName(ch.NewValue); who != "" {
			return who
		}
	}
	if up.Revision != nil {
		return identityName(up.Revision.Fields[fieldAuthorizedAs])
	}
	return ""
}

// identityName reads an identity field: an IdentityRef object or a
// "Display Name <unique name>" string.
func identityName(raw json.RawMessage) string {
	var id identity
	if json.Unmarshal(raw, &id) == nil && id.UniqueName != "" {
		return id.UniqueName
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	if i, j := strings.LastIndexByte(s, '<'), strings.LastIndexByte(s, '>'); i >= 0 && j > i {
		return s[i+1 : j]
	}
	return s
}
