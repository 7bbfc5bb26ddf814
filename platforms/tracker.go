// Package platforms defines the contract every issue tracker implements so
// that the lifecycle above it never depends on a tracker's SDK. A Tracker is
// bound to one configured project (one repository, one token); the webhook
// side (WebhookDecoder) is per platform, because a receiver must authenticate
// a delivery before it knows which project it belongs to.
package platforms

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Sentinel errors a caller decides on with errors.Is.
var (
	// ErrPreconditionFailed means a write lost a race with another writer
	// (Azure DevOps rev mismatch, a held Jira label lock, a lifecycle label
	// another writer put on a GitHub or GitLab ticket during the write). It
	// is an outcome, not a fault: the caller re-reads.
	ErrPreconditionFailed = errors.New("precondition failed")
	// ErrNotFound means the ticket (or repository) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrUnauthenticated means a webhook delivery failed authentication.
	ErrUnauthenticated = errors.New("webhook authentication failed")
	// ErrMalformed means a webhook body could not be parsed.
	ErrMalformed = errors.New("malformed webhook payload")
)

// Ref names one ticket. ID is unique within its platform: for GitHub it is
// "owner/repo#12", so two repositories' issue 12 never share a Redis key.
type Ref struct {
	Platform string `json:"platform"`
	Project  string `json:"project"`
	ID       string `json:"id"`
}

// Key is the ticket's identity in Redis keys: "{platform}:{id}".
func (r Ref) Key() string { return r.Platform + ":" + r.ID }

func (r Ref) String() string { return r.Platform + ":" + r.ID }

// DefaultLabelPrefix is the specification's prefix for lifecycle labels
// ("agent-smith:enqueued"). It is defined here, below both the domain
// (lifecycle.DefaultLabelPrefix refers to it) and the platforms that watch
// for foreign lifecycle writes (GitHub and GitLab Relabel).
const DefaultLabelPrefix = "agent-smith"

// Ticket is a snapshot of a ticket as the tracker returned it.
type Ticket struct {
	Ref    Ref      `json:"ref"`
	Title  string   `json:"title"`
	Body   string   `json:"body"`
	URL    string   `json:"url"`
	Open   bool     `json:"open"`
	Labels []string `json:"labels"`
	// Version is the platform's concurrency token for this snapshot (GitHub
	// ETag, Azure DevOps rev). Opaque; empty where the platform has none.
	Version string `json:"-"`
	// Whole is set on a snapshot that is the service's own answer for the
	// whole ticket (a read, or a write answered with the ticket: GitLab's
	// PUT, Azure DevOps' PATCH, Jira Cloud's PUT with returnIssue); false
	// on a caller's snapshot with only its labels brought up to date from
	// a label write's answer (GitHub REST's, or Jira Data Center's PUT,
	// which answers nothing).
	Whole bool `json:"-"`
	// Node is the platform's global id of the ticket where its writes
	// address it so (GitHub's GraphQL node id); "" elsewhere or unknown.
	Node string `json:"-"`
}

// HasLabel reports whether the ticket carries label, as its platform
// compares label names (SameLabel).
func (t *Ticket) HasLabel(label string) bool {
	return ContainsLabel(t.Ref.Platform, t.Labels, label)
}

// Tracker is one project on one tracker. Implementations must be safe for
// concurrent use.
type Tracker interface {
	// Get reads the ticket with its version token.
	Get(ctx context.Context, ref Ref) (*Ticket, error)
	// Relabel removes the labels in remove and adds every label of add,
	// leaving every other label untouched and in order, also when someone
	// edits them meanwhile. A label in both is added, not removed; ""
	// entries are ignored. The labels move in one write where the platform
	// has one (GitLab, Azure DevOps, Jira), so a state and a stage label
	// change together. It is conditional on t.Version where the platform
	// honours a condition (Azure DevOps); elsewhere t.Labels must be fresh,
	// and a lifecycle label that appears from another writer is the lost
	// race. A lost race is ErrPreconditionFailed. Where the platform has no
	// single write for it (GitHub), the adds are written before the removes,
	// so an interrupted Relabel leaves both, which lifecycle.Labels.StateOf
	// reads as the further state. It returns the ticket as written, with
	// its new version where the answer carries one, so a following write
	// need not read again.
	Relabel(ctx context.Context, t *Ticket, remove []string, add ...string) (*Ticket, error)
	// Comment posts a comment on the ticket.
	Comment(ctx context.Context, ref Ref, body string) error
	// ListOpen lists every open ticket carrying label, following pagination.
	ListOpen(ctx context.Context, label string) ([]*Ticket, error)
}

// WholeAnswers is the optional capability of a tracker whose Relabel
// answers with the whole ticket as the service holds it right after the
// write (Ticket.Whole): open or closed, title, body, every label and the
// new version. A caller may then use the answer of its write where it would
// otherwise read the ticket first, provided the write itself fails on a
// ticket that changed since its snapshot (a revision test, or a lifecycle
// label from another writer) and the caller checks the answer as it would
// have checked the read.
type WholeAnswers interface {
	// AnswersWhole reports whether Relabel answers with the whole ticket.
	// An answer may still come back without Whole (a fallback write path):
	// the caller then reads the ticket.
	AnswersWhole() bool
}

// BlockerReader is the optional capability behind a project's readiness
// rule (readiness.require_no_open_blockers): a ticket is not claimed while a
// ticket that blocks it is open. What counts as a blocker is the platform's
// own dependency link (GitHub issue dependencies, GitLab "is blocked by"
// links, Azure DevOps predecessors, Jira "is blocked by" links).
type BlockerReader interface {
	// OpenBlockers returns the ids of the open tickets blocking ref, in the
	// form of Ref.ID where the blocker belongs to a configured project's
	// platform (so a close event of that ticket can be matched), sorted.
	OpenBlockers(ctx context.Context, ref Ref) ([]string, error)
}

// PermissionChecker is the optional capability behind a project's default
// trigger rule (trigger.allow.write): only someone with write access to the
// repository or project may start a run by adding the trigger label
// (GitHub collaborator permission write, maintain or admin; GitLab
// Developer or higher; Azure DevOps a member of the project's Contributors
// or Project Administrators; Jira EDIT_ISSUES in the project). A tracker
// without it cannot grant anyone write access, so only listed users run.
type PermissionChecker interface {
	// MayWrite reports whether actor (as WebhookEvent.Actor names users)
	// has write access. An unknown user is false, not an error; an error
	// means the tracker could not tell, and the caller must refuse for now
	// and ask again later.
	MayWrite(ctx context.Context, actor string) (bool, error)
}

// TicketPermissionChecker is PermissionChecker for a tracker whose tickets
// live in several projects with their own permission schemes (a Jira JQL
// scope): write access is asked of the ticket's project, and cached per
// project.
type TicketPermissionChecker interface {
	// PermissionScope names where write access to ref is decided (the
	// Jira project key of "A-12": "A"); "" when the tracker's one project
	// decides, which PermissionChecker.MayWrite answers.
	PermissionScope(ref Ref) string
	// MayWriteIn is MayWrite in that scope.
	MayWriteIn(ctx context.Context, scope, actor string) (bool, error)
}

// Scoped is the optional capability of a tracker whose tickets are chosen
// by a query the tracker evaluates (a Jira JQL scope across projects): a
// webhook cannot tell from its payload whether a ticket belongs to the
// project, so the claim asks before it writes.
type Scoped interface {
	// InScope reports whether ref is one of the project's tickets now. An
	// error means the tracker could not tell; the claim is tried again.
	InScope(ctx context.Context, ref Ref) (bool, error)
}

// TeamChecker is the optional capability behind trigger.allow.teams: a
// member of a listed team (GitHub) or group (GitLab, Azure DevOps, Jira)
// may start runs without write access, as Atlantis and Prow admit teams.
// A tracker without it cannot admit anyone by team, so config validation
// refuses teams for its platform.
type TeamChecker interface {
	// InTeam reports whether actor (as WebhookEvent.Actor names users) is
	// an active member of team, named as the platform names it (GitHub
	// "org/slug" or a slug in the repository's organization, a GitLab
	// group's full path, an Azure DevOps group of the project, a Jira
	// group). An unknown user or team is false, not an error; an error
	// means the tracker could not tell, and the caller must refuse for now.
	InTeam(ctx context.Context, actor, team string) (bool, error)
}

// LabelHistory is the optional capability that tells, from a ticket's
// history, who added a label (GitHub issue events, GitLab resource label
// events, Azure DevOps work item updates, Jira changelog): what the claim
// gates on when no webhook named the person (polling, the TriggerSweeper,
// a webhook for another change).
type LabelHistory interface {
	// LabelAddedBy returns who last added label to the ticket, as
	// WebhookEvent.Actor names users; "" when the history names nobody.
	LabelAddedBy(ctx context.Context, ref Ref, label string) (string, error)
}

// EventKind classifies a webhook delivery.
type EventKind int

const (
	// EventIgnored is a well-formed delivery the daemon has no use for; the
	// receiver answers 2xx so the platform does not retry it.
	EventIgnored EventKind = iota
	// EventPing is the platform's connectivity check.
	EventPing
	// EventTicket says a ticket changed in a way that may make it claimable.
	EventTicket
	// EventComment says a person commented on a ticket: Comment holds the
	// comment's first line (a command such as "/agent-smith retry" must be
	// there), Actor its author, Ticket the ticket it is on. Comments the
	// platform marks as made by a bot or the system are EventIgnored.
	EventComment
	// EventRepositories says the repositories a discovered project serves
	// may have changed (GitHub: a repository created, archived, deleted,
	// renamed or transferred; repositories added to or removed from an App
	// installation): the receiver asks every replica to list them again.
	// Locator names the repository when the payload has one.
	EventRepositories
)

// WebhookEvent is a parsed, authenticated delivery.
type WebhookEvent struct {
	Kind EventKind
	// DeliveryID de-duplicates redeliveries (X-GitHub-Delivery, …).
	DeliveryID string
	// Name and Action are the platform's event name and action, for logs.
	Name, Action string
	// Locator identifies the project on the platform (GitHub "owner/repo").
	Locator string
	// Ticket is the ticket as the payload described it; Ref.Project is unset.
	Ticket *Ticket
	// Reason, on an EventIgnored delivery, says why when the cause is
	// something the user can fix (a subscription sending too little); the
	// receiver logs it and puts it in its answer.
	Reason string
	// At is when the payload says the ticket changed (GitHub
	// issue.updated_at, GitLab object_attributes.updated_at, Azure DevOps
	// createdDate, Jira timestamp); zero when it has none. The receiver
	// ignores a delivery older than its de-duplication window: a replay of a
	// captured body after its record expired.
	At time.Time
	// Actor is who made the change, as the platform's permission API names
	// users (GitHub sender.login, GitLab user.username, Azure DevOps
	// resource.revisedBy.uniqueName, Jira user.accountId on Cloud and
	// user.name on Data Center); empty when the payload names nobody. The
	// claim gates the run on it (project trigger.allow).
	Actor string
	// Added are the labels this change added: every label of a ticket it
	// created (GitHub opened, GitLab open, Azure DevOps workitem.created,
	// Jira issue_created), the label of a GitHub labeled action, the
	// difference of the label lists GitLab's changes, Azure DevOps'
	// System.Tags old and new values and Jira's changelog report. Actor is
	// who added the trigger label only when it is among them.
	Added []string
	// Comment is the first line of a new comment (EventComment), at most
	// MaxCommentLine bytes, from CommentLine.
	Comment string
}

// AddedLabel reports whether the change added label, as the ticket's
// platform compares label names (SameLabel).
func (e WebhookEvent) AddedLabel(label string) bool {
	platform := ""
	if e.Ticket != nil {
		platform = e.Ticket.Ref.Platform
	}
	return ContainsLabel(platform, e.Added, label)
}

// NewLabels is the labels in after that are not in before, as platform
// compares label names: what a change added, from the label lists a payload
// gives before and after it.
func NewLabels(platform string, before, after []string) []string {
	var added []string
	for _, l := range after {
		if !ContainsLabel(platform, before, l) {
			added = append(added, l)
		}
	}
	return added
}

// WebhookDecoder authenticates and parses one platform's deliveries.
type WebhookDecoder interface {
	// Verify checks the delivery against each secret in constant time and
	// returns the index of the one that matched, or ErrUnauthenticated.
	Verify(h http.Header, body []byte, secrets [][]byte) (int, error)
	// Parse decodes an authenticated delivery. A malformed body wraps
	// ErrMalformed; an event the daemon does not handle is EventIgnored.
	Parse(h http.Header, body []byte) (WebhookEvent, error)
}

// String names the delivery in logs and errors ("issues/labeled <id>"):
// the event, its action and the delivery id, never the payload's text.
func (e WebhookEvent) String() string {
	return fmt.Sprintf("%s/%s %s", e.Name, e.Action, e.DeliveryID)
}

// Locker gives a tracker a short Redis mutex for platforms whose label write
// is unconditional (Jira): the write happens only while the lock is held, and
// a held lock is ErrPreconditionFailed. The daemon implements it with
// pkg/redislock; key names come from pkg/keys.
type Locker interface {
	// TryLock takes key for ttl. ok is false when someone else holds it.
	TryLock(ctx context.Context, key string, ttl time.Duration) (unlock func(), ok bool, err error)
}

// WebLinker is implemented by trackers that can name a ticket's page in the
// platform's web UI from its ref alone, without an API call (status pages
// link every ticket they show; reading each one would spend rate limit).
type WebLinker interface {
	WebURL(ref Ref) (string, error)
}

// ReactionEyes is the reaction a claim adds: "eyes" on GitHub and GitLab
// alike, the conventional "someone is looking at this".
const ReactionEyes = "eyes"

// Reactor is implemented by trackers that can put a reaction (emoji) on a
// ticket. It is optional: the claim service reacts only where a project
// asks for it and its tracker has reactions.
type Reactor interface {
	// React adds the bot's reaction name to the ticket. Reacting again with
	// the same name is not an error.
	React(ctx context.Context, ref Ref, name string) error
}

// SelfIdentifier is the optional capability of a tracker that can tell
// which account its own credential writes as. The approval gate refuses a
// decision of that account: a pipeline holding the daemon's token (or a
// config listing the daemon among approvers) would otherwise approve its
// own work.
type SelfIdentifier interface {
	// Self names the account the tracker's credential authenticates as,
	// as WebhookEvent.Actor names users (GitHub login, GitLab username,
	// Azure DevOps unique name, Jira Cloud accountId or Data Center
	// name); "" when the credential is not a user's (a GitHub App
	// installation, whose [bot] account config validation refuses as an
	// approver). An error means the tracker could not tell.
	Self(ctx context.Context) (string, error)
}
