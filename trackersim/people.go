package trackersim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
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

// knownLogin finds the user whose derived id is id among the users the sim
// knows (those given a role, and HumanLogin).
func (s *Sim) knownLogin(id int64) (string, bool) {
	s.check.mu.Lock()
	defer s.check.mu.Unlock()
	for login := range s.check.roles {
		if userID(login) == id {
			return login, true
		}
	}
	return HumanLogin, userID(HumanLogin) == id
}

// gitlabPeopleRoutes serves user lookup by name and project membership.
func (s *Sim) gitlabPeopleRoutes(mux *http.ServeMux) {
	// GET /users?username= (https://docs.gitlab.com/api/users/#list-users):
	// an array with the one user of that name. Every name is a user in the
	// sim; GitLab answers [] for a name it does not know.
	mux.HandleFunc("GET "+glAPI+"/users", func(w http.ResponseWriter, r *http.Request) {
		s.countCall("GET " + glAPI + "/users")
		if !s.glAuthenticate(r) {
			glMessage(w, http.StatusUnauthorized, "401 Unauthorized")
			return
		}
		name := r.URL.Query().Get("username")
		out := []map[string]any{}
		if name != "" {
			out = append(out, map[string]any{"id": userID(name), "username": name, "name": name, "state": "active",
				"web_url": s.requestBase(r) + "/" + name})
		}
		writeJSON(w, http.StatusOK, out)
	})
	// GET /projects/:id/members/all/:user_id
	// (https://docs.gitlab.com/api/members/#get-a-member-of-a-group-or-project-including-inherited-and-invited-members):
	// 404 "404 Not found" for a user who is no member.
	s.glRoute(mux, "GET", "/projects/{id}/members/all/{user_id}", func(w http.ResponseWriter, r *http.Request, c *glCall) {
		id, err := strconv.ParseInt(r.PathValue("user_id"), 10, 64)
		login, ok := s.knownLogin(id)
		level := glAccessLevel[s.userRole(login)]
		if err != nil || !ok || level == 0 {
			glMessage(w, http.StatusNotFound, "404 Not found")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "username": login, "name": login, "state": "active",
			"access_level": level, "web_url": c.base + "/" + login})
	})
	mux.HandleFunc("GET "+glAPI+"/groups/{id}/members/all/{user_id}", s.glGroupMember)
}

// adoGroupOfRole is the project group each role stands for on Azure DevOps
// (https://learn.microsoft.com/azure/devops/organizations/security/permissions-access).
var adoGroupOfRole = map[string]string{RoleRead: "Readers", RoleTriage: "Readers", RoleWrite: "Contributors",
	RoleAdmin: "Project Administrators"}

// adoGroupDescriptor is a project group's identity descriptor. Roles hold
// on every project in the sim, so one descriptor per group name stands for
// that group of each project.
func adoGroupDescriptor(group string) string {
	return fmt.Sprintf("Microsoft.TeamFoundation.Identity;S-1-9-1551374245-%d", userID("group|"+strings.ToLower(group)))
}

// adoReadIdentities serves Identities - Read Identities with
// searchFilter=General (https://learn.microsoft.com/rest/api/azure/devops/ims/identities/read-identities):
// a group by its "[project]\name", a user by unique name; memberOf lists
// the user's groups unless queryMembership is None (the default).
// Unknown names give an empty list, not 404.
func (s *Sim) adoReadIdentities(w http.ResponseWriter, r *http.Request, _ *adoCall) {
	q := r.URL.Query()
	name := q.Get("filterValue")
	out := []map[string]any{}
	if _, group, ok := strings.Cut(name, "]\\"); ok && strings.HasPrefix(name, "[") {
		known := slices.ContainsFunc(slices.Collect(maps.Values(adoGroupOfRole)), func(g string) bool { return strings.EqualFold(g, group) })
		if exists, _ := s.team(group, ""); known || exists {
			out = append(out, map[string]any{"descriptor": adoGroupDescriptor(group), "isActive": true,
				"providerDisplayName": name, "isContainer": true})
		}
	} else if login, ok := strings.CutSuffix(name, adoUniqueSuffix); ok && login != "" {
		id := map[string]any{"descriptor": "Microsoft.IdentityModel.Claims.ClaimsIdentity;" + name, "isActive": true,
			"providerDisplayName": login, "isContainer": false,
			"properties": map[string]any{"Account": map[string]string{"$type": "System.String", "$value": name}}}
		if m := q.Get("queryMembership"); m != "" && !strings.EqualFold(m, "None") {
			member := []string{}
			if g, ok := adoGroupOfRole[s.userRole(login)]; ok {
				member = append(member, adoGroupDescriptor(g))
			}
			for _, t := range s.teamsOf(login) {
				member = append(member, adoGroupDescriptor(t))
			}
			id["memberOf"] = member
		}
		out = append(out, id)
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(out), "value": out})
}

// jiraUserPermissionSearch serves "Find users with permissions", GET
// /rest/api/{2|3}/user/permission/search: the users (here: the one asked
// for) holding every permission in permissions on projectKey. Cloud takes
// accountId (or query) and refuses a request with neither (400); Data
// Center takes username
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-user-search/#api-rest-api-3-user-permission-search-get).
func (s *Sim) jiraUserPermissionSearch(w http.ResponseWriter, r *http.Request, c *jiraCall) {
	q := r.URL.Query()
	if key := q.Get("projectKey"); key != "" {
		if _, _, ok := s.store.repoInfo(key); !ok {
			jiraError(w, http.StatusNotFound, "No project could be found with key '"+key+"'.")
			return
		}
	}
	if q.Get("permissions") == "" {
		jiraError(w, http.StatusBadRequest, "The 'permissions' query parameter is required.")
		return
	}
	login, found := "", false
	if s.jiraDataCenter() {
		login = q.Get("username")
		found = login != ""
	} else {
		if q.Get("accountId") == "" && q.Get("query") == "" {
			jiraError(w, http.StatusBadRequest, "The query parameter 'query' or 'accountId' is required.")
			return
		}
		if id, err := strconv.ParseInt(q.Get("accountId"), 10, 64); err == nil {
			login, found = s.knownLogin(id)
		}
	}
	out := []jiraUser{}
	if found {
		held := jiraRolePermissions[s.userRole(login)]
		all := true
		for _, p := range strings.Split(q.Get("permissions"), ",") {
			all = all && slices.Contains(held, strings.TrimSpace(p))
		}
		if all {
			out = append(out, s.jiraActor(c.base, login))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// BotLogin is the user every API token authenticates as unless SetAccess
// says otherwise: the daemon's own account in tests.
const BotLogin = botLogin
