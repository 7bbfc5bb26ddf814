package github

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/agentsmithd/agentsmithd/pkg/webhooksig"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// Webhook header names GitHub sends.
const (
	HeaderEvent     = "X-GitHub-Event"
	HeaderDelivery  = "X-GitHub-Delivery"
	HeaderSignature = "X-Hub-Signature-256"
)

// Webhooks authenticates and parses GitHub deliveries. It holds no state:
// the secrets come per call, so a receiver can rotate them without a restart.
type Webhooks struct {
	// Spellings are the daemon's lifecycle labels as it spells them; a
	// payload's labels are read in these spellings, as the tracker reads
	// them (platforms.Respell), so a ticket labelled "Agent-Smith:Done"
	// shows done in a delivery too.
	Spellings []string
}

var _ platforms.WebhookDecoder = Webhooks{}

// Verify checks X-Hub-Signature-256 against every secret with hmac.Equal
// and returns the index of the first that matches. Every secret is tried
// even after a match, so timing says nothing about which one it was.
func (Webhooks) Verify(h http.Header, body []byte, secrets [][]byte) (int, error) {
	i, err := webhooksig.VerifyHMAC(h.Get(HeaderSignature), body, secrets)
	if err != nil {
		return -1, fmt.Errorf("github: %s %w: %w", HeaderSignature, err, platforms.ErrUnauthenticated)
	}
	return i, nil
}

// Sign is the HMAC-SHA256 GitHub computes over a delivery body; the
// X-Hub-Signature-256 value is "sha256=" + hex(Sign(body, secret)).
func Sign(body, secret []byte) []byte { return webhooksig.Sign(body, secret) }

// SignatureHeader is the X-Hub-Signature-256 value for body, for senders
// (the emulator, tests).
func SignatureHeader(body, secret []byte) string { return webhooksig.Header(body, secret) }

// ticketActions are the issues actions after which a ticket may have become
// claimable (it appeared, gained a label, came back, or changed text) or a
// running one must be cancelled (closed, lost its trigger label).
var ticketActions = map[string]bool{"opened": true, "labeled": true, "reopened": true, "edited": true,
	"closed": true, "unlabeled": true}

// Parse decodes an authenticated delivery (parse says how) and reads the
// ticket's labels in the daemon's spelling (Spellings), as the tracker
// reads them.
func (w Webhooks) Parse(h http.Header, body []byte) (platforms.WebhookEvent, error) {
	ev, err := w.parse(h, body)
	ev.RespellTicket(w.Spellings)
	return ev, err
}

// parse is Parse before the labels are respelled. Pings are EventPing; issues
// events with a ticketAction are EventTicket; issue_comment created on an
// issue (not a pull request) by a person is EventComment; every other well-formed
// delivery (other events, other actions, pull requests) is EventIgnored and
// is read no further than needed to tell, so a field the daemon does not
// use can never make it fail: GitHub disables nothing, but its delivery log
// and any proxy in front should see a 2xx for an event we do not act on.
// Only a body that is not a JSON object, or an issues delivery the daemon
// acts on without a repository or issue number, is ErrMalformed. It never
// panics, whatever the input.
func (Webhooks) parse(h http.Header, body []byte) (platforms.WebhookEvent, error) {
	ev := platforms.WebhookEvent{
		Name:       h.Get(HeaderEvent),
		DeliveryID: h.Get(HeaderDelivery),
	}
	if ev.Name == "" {
		return ev, fmt.Errorf("github: delivery %q has no %s header: %w", ev.DeliveryID, HeaderEvent, platforms.ErrMalformed)
	}
	head, err := platforms.ParseWebhookBody(body)
	if err != nil {
		return ev, fmt.Errorf("github: %s delivery %q: %w", ev.Name, ev.DeliveryID, err)
	}
	ev.Action = head.String("action")
	switch ev.Name {
	case "ping":
		ev.Kind = platforms.EventPing
		return ev, nil
	case "repository", "installation_repositories":
		return repositoriesEvent(ev, body)
	case "issues":
		if ticketActions[ev.Action] {
			break
		}
		fallthrough
	case "issue_comment":
		if ev.Name == "issue_comment" && ev.Action == "created" {
			break
		}
		fallthrough
	default:
		return ev, nil // EventIgnored
	}
	// One pass into only the fields the lifecycle reads: decoding the whole
	// go-github IssuesEvent (hundreds of fields, most behind pointers) takes
	// a third of the receiver's CPU in the bench's profile.
	var p issuesPayload
	if err := json.Unmarshal(body, &p); err != nil {
		return ev, fmt.Errorf("github: %s delivery %q: %w: %v", ev.Name, ev.DeliveryID, platforms.ErrMalformed, err)
	}
	repo := p.Repository.FullName
	if _, _, ok := splitRepo(repo); !ok {
		return ev, fmt.Errorf("github: %s delivery %q: repository.full_name %q: %w", ev.Name, ev.DeliveryID, repo, platforms.ErrMalformed)
	}
	ev.Locator = repo
	if p.Issue == nil || p.Issue.Number <= 0 {
		return ev, fmt.Errorf("github: %s delivery %q: issue number missing: %w", ev.Name, ev.DeliveryID, platforms.ErrMalformed)
	}
	if p.Issue.PullRequest != nil {
		return ev, nil // EventIgnored
	}
	ev.Kind = platforms.EventTicket
	ev.Ticket = p.Issue.ticket(repo)
	ev.At = platforms.ParseTime(p.Issue.UpdatedAt)
	ev.Actor = p.Sender.Login
	if ev.Name == "issue_comment" {
		return commentEvent(ev, p)
	}
	switch {
	case ev.Action == "opened":
		ev.Added = ev.Ticket.Labels
	case ev.Action == "labeled" && p.Label != nil:
		ev.Added = []string{p.Label.Name}
	}
	return ev, nil
}

// commentEvent finishes an issue_comment "created" delivery
// (https://docs.github.com/en/webhooks/webhook-events-and-payloads#issue_comment):
// a comment by a bot or app (comment.user.type "Bot", the daemon's own
// comments as a GitHub App among them) is EventIgnored, so the daemon never
// answers itself.
func commentEvent(ev platforms.WebhookEvent, p issuesPayload) (platforms.WebhookEvent, error) {
	if p.Comment == nil || p.Comment.User.Type == "Bot" || p.Sender.Type == "Bot" {
		ev.Kind, ev.Ticket = platforms.EventIgnored, nil
		return ev, nil
	}
	ev.Kind = platforms.EventComment
	ev.Comment = platforms.CommentLine(p.Comment.Body)
	if p.Comment.User.Login != "" {
		ev.Actor = p.Comment.User.Login
	}
	ev.At = platforms.ParseTime(p.Comment.CreatedAt)
	return ev, nil
}

// issuesPayload is the part of an issues (or ping) delivery the daemon
// reads. Documented at
// https://docs.github.com/en/webhooks/webhook-events-and-payloads#issues.
type issuesPayload struct {
	Action     string `json:"action"`
	Repository struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
	Issue *issuesPayloadIssue `json:"issue"`
	// Sender is who triggered the event
	// (https://docs.github.com/en/webhooks/webhook-events-and-payloads#issues).
	Sender struct {
		Login string `json:"login"`
		Type  string `json:"type"`
	} `json:"sender"`
	// Comment is the new comment of an issue_comment delivery.
	Comment *struct {
		Body      string `json:"body"`
		CreatedAt string `json:"created_at"`
		User      struct {
			Login string `json:"login"`
			Type  string `json:"type"`
		} `json:"user"`
	} `json:"comment"`
	// Label is the label a labeled or unlabeled action added or removed.
	Label *struct {
		Name string `json:"name"`
	} `json:"label"`
}

type issuesPayloadIssue struct {
	Number  int    `json:"number"`
	Title   string `json:"title"`
	Body    string `json:"body"`
	HTMLURL string `json:"html_url"`
	State   string `json:"state"`
	Labels  []struct {
		Name string `json:"name"`
	} `json:"labels"`
	UpdatedAt string `json:"updated_at"`
	// PullRequest is present when the "issue" is a pull request.
	PullRequest *json.RawMessage `json:"pull_request"`
}

func (is *issuesPayloadIssue) ticket(repo string) *platforms.Ticket {
	labels := make([]string, 0, len(is.Labels))
	for _, l := range is.Labels {
		if l.Name != "" {
			labels = append(labels, l.Name)
		}
	}
	return &platforms.Ticket{
		Ref:    platforms.Ref{Platform: Platform, ID: FormatID(repo, is.Number)},
		Title:  is.Title,
		Body:   is.Body,
		URL:    is.HTMLURL,
		Open:   is.State == "open",
		Labels: labels,
	}
}

// repositoryActions are the repository actions that change which
// repositories discovery finds or may write to
// (https://docs.github.com/en/webhooks/webhook-events-and-payloads#repository):
// "edited" (a description, a topic) changes nothing it reads, and is the
// frequent one.
var repositoryActions = map[string]bool{"created": true, "deleted": true, "archived": true, "unarchived": true,
	"renamed": true, "transferred": true, "privatized": true, "publicized": true}

// repositoriesEvent is a repository delivery (an organisation webhook or a
// GitHub App's) or an installation_repositories one, added or removed
// (https://docs.github.com/en/webhooks/webhook-events-and-payloads#installation_repositories):
// EventRepositories, so every replica lists its discovered repositories
// again. Other actions are EventIgnored.
func repositoriesEvent(ev platforms.WebhookEvent, body []byte) (platforms.WebhookEvent, error) {
	switch {
	case ev.Name == "repository" && repositoryActions[ev.Action]:
	case ev.Name == "installation_repositories" && (ev.Action == "added" || ev.Action == "removed"):
	default:
		return ev, nil
	}
	var p struct {
		Repository struct {
			FullName string `json:"full_name"`
		} `json:"repository"`
	}
	// The locator only names the repository in logs: a delivery without one
	// (installation_repositories lists several) still asks for a listing.
	if json.Unmarshal(body, &p) == nil {
		if _, _, ok := splitRepo(p.Repository.FullName); ok {
			ev.Locator = p.Repository.FullName
		}
	}
	ev.Kind = platforms.EventRepositories
	return ev, nil
}
