package trackersim

import (
	"fmt"
	"hash/fnv"
	"net/url"
	"strings"
	"time"
)

// JSON shapes of GitHub's REST API, trimmed to the fields a client reads but
// named and typed as GitHub documents them
// (https://docs.github.com/en/rest/issues/issues#get-an-issue).

// botLogin owns every API token: REST writes are made by this user, as they
// would be by the token's owner on GitHub.
const botLogin = "agentsmith-bot"

type ghUser struct {
	Login     string `json:"login"`
	ID        int64  `json:"id"`
	NodeID    string `json:"node_id"`
	AvatarURL string `json:"avatar_url"`
	URL       string `json:"url"`
	HTMLURL   string `json:"html_url"`
	Type      string `json:"type"`
	SiteAdmin bool   `json:"site_admin"`
}

type ghLabel struct {
	ID          int64   `json:"id"`
	NodeID      string  `json:"node_id"`
	URL         string  `json:"url"`
	Name        string  `json:"name"`
	Color       string  `json:"color"`
	Default     bool    `json:"default"`
	Description *string `json:"description"`
}

type ghIssue struct {
	ID                int64     `json:"id"`
	NodeID            string    `json:"node_id"`
	URL               string    `json:"url"`
	RepositoryURL     string    `json:"repository_url"`
	LabelsURL         string    `json:"labels_url"`
	CommentsURL       string    `json:"comments_url"`
	EventsURL         string    `json:"events_url"`
	HTMLURL           string    `json:"html_url"`
	Number            int       `json:"number"`
	State             string    `json:"state"`
	StateReason       *string   `json:"state_reason"`
	Title             string    `json:"title"`
	Body              *string   `json:"body"`
	User              ghUser    `json:"user"`
	Labels            []ghLabel `json:"labels"`
	Assignee          *ghUser   `json:"assignee"`
	Assignees         []ghUser  `json:"assignees"`
	Milestone         any       `json:"milestone"`
	Locked            bool      `json:"locked"`
	ActiveLockReason  *string   `json:"active_lock_reason"`
	Comments          int       `json:"comments"`
	CreatedAt         string    `json:"created_at"`
	UpdatedAt         string    `json:"updated_at"`
	ClosedAt          *string   `json:"closed_at"`
	ClosedBy          *ghUser   `json:"closed_by,omitempty"`
	AuthorAssociation string    `json:"author_association"`
}

type ghComment struct {
	ID                int64  `json:"id"`
	NodeID            string `json:"node_id"`
	URL               string `json:"url"`
	HTMLURL           string `json:"html_url"`
	IssueURL          string `json:"issue_url"`
	Body              string `json:"body"`
	User              ghUser `json:"user"`
	CreatedAt         string `json:"created_at"`
	UpdatedAt         string `json:"updated_at"`
	AuthorAssociation string `json:"author_association"`
}

type ghRepo struct {
	ID              int64  `json:"id"`
	NodeID          string `json:"node_id"`
	Name            string `json:"name"`
	FullName        string `json:"full_name"`
	Private         bool   `json:"private"`
	Owner           ghUser `json:"owner"`
	HTMLURL         string `json:"html_url"`
	URL             string `json:"url"`
	IssuesURL       string `json:"issues_url"`
	DefaultBranch   string `json:"default_branch"`
	HasIssues       bool   `json:"has_issues"`
	OpenIssuesCount int    `json:"open_issues_count"`
	Archived        bool   `json:"archived"`
	Disabled        bool   `json:"disabled"`
	CreatedAt       string `json:"created_at,omitempty"`
	// Permissions is the authenticated user's role on the repository
	// (admin, maintain, push, triage, pull), present on GET /repos/{o}/{r}.
	Permissions map[string]bool `json:"permissions,omitempty"`
}

type ghError struct {
	Message          string         `json:"message"`
	Errors           []ghFieldError `json:"errors,omitempty"`
	DocumentationURL string         `json:"documentation_url"`
}

type ghFieldError struct {
	Resource string `json:"resource"`
	Field    string `json:"field"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
}

// ghTime formats a time as GitHub does: ISO 8601 UTC, whole seconds.
func ghTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func ghTimePtr(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := ghTime(t)
	return &s
}

// userID derives a stable id from a login.
func userID(login string) int64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(login))
	return int64(h.Sum32()%1_000_000) + 1000
}

func (s *Sim) ghUser(base, login string) ghUser {
	id := userID(login)
	return ghUser{Login: login, ID: id, NodeID: fmt.Sprintf("U_sim%d", id),
		AvatarURL: base + "/avatars/" + url.PathEscape(login), URL: base + "/github/users/" + url.PathEscape(login),
		HTMLURL: base + "/" + url.PathEscape(login), Type: "User"}
}

func apiRepoURL(base, repo string) string { return base + "/github/repos/" + repo }

func (s *Sim) ghLabel(base, repo string, l label) ghLabel {
	out := ghLabel{ID: l.id, NodeID: fmt.Sprintf("LA_sim%d", l.id),
		URL:  apiRepoURL(base, repo) + "/labels/" + url.PathEscape(l.name),
		Name: l.name, Color: l.color}
	if l.description != "" {
		d := l.description
		out.Description = &d
	}
	return out
}

func (s *Sim) ghIssue(base string, sn snapshot) ghIssue {
	api := fmt.Sprintf("%s/issues/%d", apiRepoURL(base, sn.repo), sn.number)
	out := ghIssue{ID: sn.id, NodeID: fmt.Sprintf("I_sim%d", sn.id), URL: api,
		RepositoryURL: apiRepoURL(base, sn.repo), LabelsURL: api + "/labels{/name}",
		CommentsURL: api + "/comments", EventsURL: api + "/events", HTMLURL: issueHTMLURL(base, sn),
		Number: sn.number, State: "open", Title: sn.title, User: s.ghUser(base, sn.author),
		Labels: make([]ghLabel, len(sn.labels)), Assignees: []ghUser{}, Comments: len(sn.comments),
		CreatedAt: ghTime(sn.createdAt), UpdatedAt: ghTime(sn.updatedAt), ClosedAt: ghTimePtr(sn.closedAt),
		AuthorAssociation: "OWNER"}
	if !sn.open {
		out.State = "closed"
	}
	if sn.stateReason != "" {
		r := sn.stateReason
		out.StateReason = &r
	}
	if sn.body != "" {
		b := sn.body
		out.Body = &b
	}
	if sn.closedBy != "" {
		u := s.ghUser(base, sn.closedBy)
		out.ClosedBy = &u
	}
	for i, l := range sn.labels {
		out.Labels[i] = s.ghLabel(base, sn.repo, l)
	}
	return out
}

// issueHTMLURL points at the issue's entry on the sim's page.
func issueHTMLURL(base string, sn snapshot) string {
	return fmt.Sprintf("%s/#%s", base, issueAnchor(sn.repo, sn.number))
}

func issueAnchor(repo string, number int) string {
	return fmt.Sprintf("%s/%d", repo, number)
}

func (s *Sim) ghComment(base string, sn snapshot, c comment) ghComment {
	return ghComment{ID: c.id, NodeID: fmt.Sprintf("IC_sim%d", c.id),
		URL:      fmt.Sprintf("%s/issues/comments/%d", apiRepoURL(base, sn.repo), c.id),
		HTMLURL:  fmt.Sprintf("%s-comment-%d", issueHTMLURL(base, sn), c.id),
		IssueURL: fmt.Sprintf("%s/issues/%d", apiRepoURL(base, sn.repo), sn.number),
		Body:     c.body, User: s.ghUser(base, c.author), CreatedAt: ghTime(c.at), UpdatedAt: ghTime(c.updated()),
		AuthorAssociation: "OWNER"}
}

func (s *Sim) ghRepo(base, full string, id int64, created time.Time) ghRepo {
	owner, name, _ := strings.Cut(full, "/")
	r := ghRepo{ID: id, NodeID: fmt.Sprintf("R_sim%d", id), Name: name, FullName: full,
		Owner: s.ghUser(base, owner), HTMLURL: base + "/?repo=" + url.QueryEscape(full),
		URL: apiRepoURL(base, full), IssuesURL: apiRepoURL(base, full) + "/issues{/number}",
		DefaultBranch: "main", HasIssues: true}
	if !created.IsZero() {
		r.CreatedAt = ghTime(created)
	}
	return r
}
