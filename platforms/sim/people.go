package sim

import (
	"net/http"
	"strings"

	"go.uber.org/zap"
)

// HumanLogin is the user behind the Go API's plain human actions
// (CreateIssue, AddLabels, …), the control API and the page. It has write
// access (RoleWrite) unless a test says otherwise with SetUserRole.
const HumanLogin = "human"

// Person acts on the tracker as one named user: its changes fire webhooks
// naming that user as the actor (GitHub sender, GitLab user, Azure DevOps
// revisedBy, Jira user), as a person clicking in the tracker's UI would.
type Person struct {
	s  *Sim
	by actor
}

// As returns the user login, for tests of who may trigger a run. Its role
// is what SetUserRole gave it (none by default, HumanLogin write).
func (s *Sim) As(login string) *Person {
	return &Person{s: s, by: actor{login: login, writer: humanActor.writer}}
}

// CreateIssue opens an issue, creating the repository if needed; it fires
// issues/opened and one issues/labeled per label (see Sim.CreateIssue).
func (p *Person) CreateIssue(repo, title, body string, labels ...string) int {
	if strings.TrimSpace(title) == "" {
		title = "untitled"
	}
	snap, err := p.s.store.create(repo, title, body, labels, p.by, false)
	if err != nil { // unreachable: the title is set and the repo is created
		p.s.log.Error("create issue", zap.Error(err))
		return 0
	}
	return snap.number
}

// AddLabels adds labels, firing issues/labeled per new label.
func (p *Person) AddLabels(repo string, number int, labels ...string) error {
	_, _, err := p.s.store.apply(repo, number, nil, p.by, update{Add: labels})
	return err
}

// RemoveLabel removes a label, firing issues/unlabeled.
func (p *Person) RemoveLabel(repo string, number int, label string) error {
	_, _, err := p.s.store.apply(repo, number, nil, p.by, update{Remove: []string{label}})
	return err
}

// SetOpen closes or reopens an issue.
func (p *Person) SetOpen(repo string, number int, open bool) error {
	_, _, err := p.s.store.apply(repo, number, nil, p.by, update{Open: &open})
	return err
}

// AddComment comments on an issue.
func (p *Person) AddComment(repo string, number int, body string) error {
	_, _, err := p.s.store.apply(repo, number, nil, p.by, update{Comment: &body})
	return err
}

// SetUserRole gives login role (RoleRead … RoleAdmin) on every project, as
// the permission endpoints report it (GitHub collaborator permission,
// GitLab membership, Azure DevOps group membership, Jira user permission
// search); "" removes the user from every project. Unknown users have none.
func (s *Sim) SetUserRole(login, role string) {
	s.check.mu.Lock()
	defer s.check.mu.Unlock()
	if s.check.roles == nil {
		s.check.roles = map[string]string{}
	}
	s.check.roles[login] = role
}

// userRole is login's role on every project ("" for none).
func (s *Sim) userRole(login string) string {
	s.check.mu.Lock()
	defer s.check.mu.Unlock()
	if r, ok := s.check.roles[login]; ok {
		return r
	}
	if login == HumanLogin {
		return RoleWrite
	}
	return ""
}

// ghPermissionDoc documents GET /repos/{owner}/{repo}/collaborators/{username}/permission.
const ghPermissionDoc = "https://docs.github.com/rest/collaborators/collaborators#get-repository-permissions-for-a-user"

// ghCollaboratorPermission answers "Get repository permissions for a
// user": permission is the legacy base role (admin, write, read, none),
// where maintain shows as write and triage as read; role_name is the real
// role. A user with no role gets "none".
func (s *Sim) ghCollaboratorPermission(w http.ResponseWriter, r *http.Request, c *ghCall) {
	if _, _, ok := s.store.repoInfo(c.repo); !ok {
		writeGHError(w, http.StatusNotFound, "Not Found", c.doc)
		return
	}
	login := r.PathValue("username")
	perm, role := "none", "none"
	switch s.userRole(login) {
	case RoleRead:
		perm, role = "read", "read"
	case RoleTriage:
		perm, role = "read", "triage"
	case RoleWrite:
		perm, role = "write", "write"
	case RoleAdmin:
		perm, role = "admin", "admin"
	}
	writeJSON(w, http.StatusOK, map[string]any{"permission": perm, "role_name": role, "user": s.ghUser(c.base, login)})
}

// ActorName is how dialect's webhooks name login as the actor of a change
// (GitHub sender.login, GitLab user.username, Azure DevOps
// revisedBy.uniqueName, Jira user.accountId on Cloud), which is also what
// its permission endpoints look users up by.
func ActorName(dialect, login string) string {
	switch dialect {
	case "ado":
		return adoIdentityOf(login).UniqueName
	case "jira":
		return jiraUserOf("", login).AccountID
	}
	return login
}
