package jira

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/webhooksig"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// Webhook header names Jira sends. Webhooks registered with a secret carry
// X-Hub-Signature: "sha256=" + hex(HMAC-SHA256(secret, body)), on Cloud
// (admin webhooks,
// https://developer.atlassian.com/cloud/jira/platform/webhooks/#secure-admin-webhooks)
// and Data Center
// (https://confluence.atlassian.com/adminjiraserver/managing-webhooks-938846912.html).
// X-Atlassian-Webhook-Identifier is the same on every retry of a delivery,
// so it de-duplicates redeliveries.
const (
	HeaderSignature = "X-Hub-Signature"
	HeaderDelivery  = "X-Atlassian-Webhook-Identifier"
)

// Webhook events the daemon handles (the "webhookEvent" body field).
const (
	EventIssueCreated = "jira:issue_created"
	EventIssueUpdated = "jira:issue_updated"
	// EventCommentCreated is a new comment, with the comment and its issue
	// (https://developer.atlassian.com/cloud/jira/platform/webhooks/#registering-a-webhook-via-the-jira-rest-api
	// lists comment_created; Data Center sends the same shape,
	// https://developer.atlassian.com/server/jira/platform/webhooks/).
	EventCommentCreated = "comment_created"
)

// Webhooks authenticates and parses Jira deliveries. It holds no state: the
// secrets come per call, so a receiver can rotate them without a restart.
type Webhooks struct{}

var _ platforms.WebhookDecoder = Webhooks{}

// Verify checks X-Hub-Signature against every secret with hmac.Equal and
// returns the index of the first that matches. Every secret is tried even
// after a match, so timing says nothing about which one it was. A delivery
// without a signature is refused: a Jira webhook the daemon trusts must be
// registered with a secret.
func (Webhooks) Verify(h http.Header, body []byte, secrets [][]byte) (int, error) {
	i, err := webhooksig.VerifyHMAC(h.Get(HeaderSignature), body, secrets)
	if err != nil {
		return -1, fmt.Errorf("jira: %s %w (register the webhook with a secret): %w", HeaderSignature, err, platforms.ErrUnauthenticated)
	}
	return i, nil
}

// Sign is the HMAC-SHA256 Jira computes over a delivery body.
func Sign(body, secret []byte) []byte { return webhooksig.Sign(body, secret) }

// SignatureHeader is the X-Hub-Signature value for body, for senders (the
// emulator, tests).
func SignatureHeader(body, secret []byte) string { return webhooksig.Header(body, secret) }

// webhookPayload is the part of an issue event the daemon reads
// (https://developer.atlassian.com/cloud/jira/platform/webhooks/#example-callback-for-an-issue-related-event).
type webhookPayload struct {
	WebhookEvent       string    `json:"webhookEvent"`
	IssueEventTypeName string    `json:"issue_event_type_name"`
	Timestamp          int64     `json:"timestamp"` // ms since the epoch
	Issue              *apiIssue `json:"issue"`
	// User is who made the change: accountId on Cloud, name on Data
	// Center (https://developer.atlassian.com/cloud/jira/platform/webhooks/#example-callback-for-an-issue-related-event).
	User *struct {
		AccountID string `json:"accountId"`
		Name      string `json:"name"`
	} `json:"user"`
	Changelog *changelog `json:"changelog"`
}

// changelog is what an issue update changed.
type changelog struct {
	Items []struct {
		Field      string `json:"field"`
		FromString string `json:"fromString"`
		ToString   string `json:"toString"`
	} `json:"items"`
}

// Parse decodes an authenticated delivery. jira:issue_created is
// EventTicket; jira:issue_updated is EventTicket only when its changelog
// changes the labels or the status (see ticketFields); every other
// well-formed delivery is EventIgnored, answered 2xx, and read no further
// than its webhookEvent: comments, worklogs, sprints, issue events without
// an issue, and events Atlassian adds later. Project events that change
// which projects discovery finds are EventRepositories. Jira names the
// event in the body only, so only a body that is not a JSON object, or an
// issue event the daemon acts on whose issue has no valid key, is
// ErrMalformed. It never panics, whatever the input.
func (Webhooks) Parse(h http.Header, body []byte) (platforms.WebhookEvent, error) {
	ev := platforms.WebhookEvent{DeliveryID: h.Get(HeaderDelivery)}
	if ev.DeliveryID == "" {
		// A sender without the identifier: a retry resends the same body
		// (its timestamp included), so the body's digest de-duplicates.
		sum := sha256.Sum256(body)
		ev.DeliveryID = "sha256-" + hex.EncodeToString(sum[:16])
	}
	head, err := platforms.ParseWebhookBody(body)
	if err != nil {
		return ev, fmt.Errorf("jira: delivery %q: %w", ev.DeliveryID, err)
	}
	ev.Name, ev.Action = head.String("webhookEvent"), head.String("issue_event_type_name")
	if ev.Name == EventCommentCreated && head.Has("issue") && head.Has("comment") {
		return parseComment(ev, body)
	}
	if projectEvents[ev.Name] {
		return projectEvent(ev, body), nil
	}
	if ev.Name != EventIssueCreated && ev.Name != EventIssueUpdated || !head.Has("issue") {
		// Jira Cloud documents no issue event without an issue; a sender
		// that omits it (or a Jira Automation "send web request" body
		// without webhookEvent) is not something the daemon acts on.
		return ev, nil // EventIgnored
	}
	if ev.Name == EventIssueUpdated {
		// An update is read no further unless it changes what the daemon
		// acts on; a changelog it cannot read changes nothing it knows.
		var u struct {
			Changelog *changelog `json:"changelog"`
		}
		if json.Unmarshal(body, &u) != nil || !changesTicketFields(u.Changelog) {
			return ev, nil // EventIgnored
		}
	}
	var p webhookPayload
	if err := json.Unmarshal(body, &p); err != nil {
		return ev, fmt.Errorf("jira: %s delivery %q: %w: %v", ev.Name, ev.DeliveryID, platforms.ErrMalformed, err)
	}
	project, _, err := ParseID(p.Issue.Key)
	if err != nil {
		return ev, fmt.Errorf("jira: %s delivery %q: issue.key: %w: %v", ev.Name, ev.DeliveryID, platforms.ErrMalformed, err)
	}
	if pr := p.Issue.Fields.Project; pr != nil && pr.Key != "" {
		project = pr.Key
	}
	ev.Locator = project
	ev.Kind = platforms.EventTicket
	ev.Ticket = issueTicket(siteOf(p.Issue.Self), p.Issue)
	if p.Timestamp > 0 {
		ev.At = time.UnixMilli(p.Timestamp)
	}
	if u := p.User; u != nil {
		ev.Actor = u.AccountID
		if ev.Actor == "" {
			ev.Actor = u.Name
		}
	}
	if ev.Name == EventIssueCreated {
		ev.Added = ev.Ticket.Labels
	} else if p.Changelog != nil {
		for _, it := range p.Changelog.Items {
			if it.Field == "labels" {
				ev.Added = append(ev.Added, platforms.NewLabels(Platform, strings.Fields(it.FromString), strings.Fields(it.ToString))...)
			}
		}
	}
	return ev, nil
}

// ticketFields are the changelog fields after which an issue may have
// become claimable (a label added, reopened) or a running one must be
// cancelled (closed, its trigger label removed). Jira writes a label change
// as one "labels" item whose fromString and toString are the space-separated
// label sets, and a workflow transition as a "status" item (with a
// "resolution" item when it resolves the issue).
var ticketFields = map[string]bool{"labels": true, "status": true, "resolution": true}

// changesTicketFields reports whether the changelog touches ticketFields.
func changesTicketFields(c *changelog) bool {
	if c == nil {
		return false
	}
	for _, it := range c.Items {
		if !ticketFields[it.Field] {
			continue
		}
		if it.Field != "labels" {
			return it.FromString != it.ToString
		}
		// Labels are a set: a reordering is no change.
		before, after := strings.Fields(it.FromString), strings.Fields(it.ToString)
		slices.Sort(before)
		slices.Sort(after)
		if !slices.Equal(slices.Compact(before), slices.Compact(after)) {
			return true
		}
	}
	return false
}

// siteOf is the site root of an issue's REST self link
// ("https://x.atlassian.net/rest/api/2/issue/10001" → "https://x.atlassian.net/"),
// or "" when the link has no REST path.
func siteOf(self string) string {
	i := strings.Index(self, "/rest/api/")
	if i < 0 {
		return ""
	}
	return self[:i+1]
}

// commentPayload is the part of a comment_created delivery the daemon
// reads: the comment (body a wiki-markup string, or an ADF document where a
// sender uses API v3's format) with its author (accountId on Cloud, name on
// Data Center), and the issue it is on.
type commentPayload struct {
	Timestamp int64 `json:"timestamp"`
	Comment   struct {
		Body   json.RawMessage `json:"body"`
		Author *struct {
			AccountID   string `json:"accountId"`
			Name        string `json:"name"`
			AccountType string `json:"accountType"`
		} `json:"author"`
	} `json:"comment"`
	Issue *apiIssue `json:"issue"`
}

// parseComment reads a comment_created delivery: a person's comment is
// EventComment; one by an app account (accountType "app", Cloud), or one
// whose issue it cannot read, is EventIgnored (never an error: a comment
// the daemon cannot read must not count towards disabling the hook).
func parseComment(ev platforms.WebhookEvent, body []byte) (platforms.WebhookEvent, error) {
	var p commentPayload
	if json.Unmarshal(body, &p) != nil || p.Issue == nil {
		return ev, nil // EventIgnored: a comment in a shape we cannot read carries no command we could act on
	}
	project, _, err := ParseID(p.Issue.Key)
	if err != nil {
		return ev, nil // EventIgnored
	}
	if pr := p.Issue.Fields.Project; pr != nil && pr.Key != "" {
		project = pr.Key
	}
	if a := p.Comment.Author; a != nil {
		if a.AccountType == "app" {
			return ev, nil // EventIgnored
		}
		ev.Actor = a.AccountID
		if ev.Actor == "" {
			ev.Actor = a.Name
		}
	}
	ev.Locator = project
	ev.Kind = platforms.EventComment
	ev.Ticket = issueTicket(siteOf(p.Issue.Self), p.Issue)
	ev.Comment = platforms.CommentLine(descriptionText(p.Comment.Body))
	if p.Timestamp > 0 {
		ev.At = time.UnixMilli(p.Timestamp)
	}
	return ev, nil
}

// projectEvents are the project webhook events that change which projects
// a site's discovery finds or may write to (Jira Cloud's admin webhooks,
// sent without a JQL filter: https://developer.atlassian.com/cloud/jira/platform/webhooks/
// lists project_created, project_updated, project_deleted,
// project_soft_deleted, project_restored_deleted, project_archived and
// project_restored_archived). project_updated (a name, a lead) changes
// nothing discovery reads and is left out.
var projectEvents = map[string]bool{"project_created": true, "project_deleted": true, "project_soft_deleted": true,
	"project_restored_deleted": true, "project_archived": true, "project_restored_archived": true}

// projectEvent is EventRepositories, with the project's key as the locator
// when the payload has a valid one (for the log only).
func projectEvent(ev platforms.WebhookEvent, body []byte) platforms.WebhookEvent {
	var p struct {
		Project struct {
			Key string `json:"key"`
		} `json:"project"`
	}
	if json.Unmarshal(body, &p) == nil && projectKey.MatchString(p.Project.Key) {
		ev.Locator = p.Project.Key
	}
	ev.Kind = platforms.EventRepositories
	return ev
}
