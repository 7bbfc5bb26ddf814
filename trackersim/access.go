package trackersim

import (
	"net/http"
	"strings"
	"sync"
)

// Access is what one API token may do, as the endpoints `agentsmithd check`
// reads report it: who it authenticates as, its role on every project, and
// (GitHub classic tokens) its OAuth scopes. The sim does not enforce the
// role on writes; it only reports it, so a test of the check can describe
// a token that a real tracker would refuse to let write.
type Access struct {
	// Login is the account's user name (default "agentsmith-bot").
	Login string
	// Role on every project: RoleRead, RoleTriage, RoleWrite (default) or
	// RoleAdmin. Each dialect reports it in its own terms (GitHub
	// permissions, GitLab access level, Jira mypermissions).
	Role string
	// Scopes, when set, are sent as GitHub's X-OAuth-Scopes header, as
	// GitHub does for classic personal access tokens; nil sends none, as
	// for fine-grained tokens and installation tokens.
	Scopes []string
	// CannotCreateTags makes the identity one that may add only the tags
	// an Azure DevOps project already defines: Stakeholder access in a
	// private project, or "Create tag definition" not allowed. A work
	// item update that names a tag the project lacks is refused with 403
	// TF401289, and the Tagging permission evaluation answers false for
	// Create (ado_rights.go). Unlike Role, the sim enforces it.
	CannotCreateTags bool
}

// Roles, from least to most.
const (
	RoleRead   = "read"   // GitHub pull, GitLab Guest, Jira browse only
	RoleTriage = "triage" // GitHub triage, GitLab Reporter, Jira browse + comment
	RoleWrite  = "write"  // GitHub push, GitLab Developer, Jira browse + edit + comment
	RoleAdmin  = "admin"  // GitHub admin, GitLab Maintainer, Jira administer (sees webhooks)
)

var roleRank = map[string]int{RoleRead: 1, RoleTriage: 2, RoleWrite: 3, RoleAdmin: 4}

// atLeast reports whether role is min or more.
func atLeast(role, min string) bool { return roleRank[role] >= roleRank[min] }

// checkState is what tests configure for the check endpoints.
type checkState struct {
	mu       sync.Mutex
	access   map[string]Access   // by token
	roles    map[string]string   // by user login (people.go)
	teams    map[string][]string // members by lower-cased team (teams.go)
	jiraDC   bool
	jiraDC10 bool
}

// SetAccess describes token (an accepted token, or "" for requests without
// one when Options.Tokens is empty).
func (s *Sim) SetAccess(token string, a Access) {
	s.check.mu.Lock()
	defer s.check.mu.Unlock()
	if s.check.access == nil {
		s.check.access = map[string]Access{}
	}
	s.check.access[token] = a
}

// The Jira flavours SetJiraDeployment serves.
const (
	// JiraCloud is Jira Cloud, the default.
	JiraCloud = "cloud"
	// JiraDataCenter is Jira Data Center 9.12: admin webhooks under
	// /rest/webhooks/1.0/webhook.
	JiraDataCenter = "datacenter"
	// JiraDataCenter10 is Jira Data Center 10.3, whose admin webhooks
	// moved to /rest/jira-webhook/1.0/webhooks (jira_check.go).
	JiraDataCenter10 = "datacenter10"
)

// SetJiraDeployment picks the Jira flavour the dialect serves: JiraCloud
// (anything unknown), JiraDataCenter or JiraDataCenter10.
func (s *Sim) SetJiraDeployment(deployment string) {
	s.check.mu.Lock()
	defer s.check.mu.Unlock()
	s.check.jiraDC = deployment == JiraDataCenter || deployment == JiraDataCenter10
	s.check.jiraDC10 = deployment == JiraDataCenter10
}

// jiraDataCenter10 reports whether the site is Data Center 10.
func (s *Sim) jiraDataCenter10() bool {
	s.check.mu.Lock()
	defer s.check.mu.Unlock()
	return s.check.jiraDC10
}

func (s *Sim) jiraDataCenter() bool {
	s.check.mu.Lock()
	defer s.check.mu.Unlock()
	return s.check.jiraDC
}

// accessOf is the Access of token with defaults filled in.
func (s *Sim) accessOf(token string) Access {
	s.check.mu.Lock()
	a := s.check.access[token]
	s.check.mu.Unlock()
	if a.Login == "" {
		a.Login = botLogin
	}
	if roleRank[a.Role] == 0 {
		a.Role = RoleWrite
	}
	return a
}

// requestAccess is the Access of the token r carries in any dialect's
// form: "token X" / "Bearer X" (GitHub, GitLab OAuth, Jira Data Center),
// PRIVATE-TOKEN (GitLab) or basic auth's password (Azure DevOps, Jira Cloud).
func (s *Sim) requestAccess(r *http.Request) Access {
	if t := r.Header.Get("PRIVATE-TOKEN"); t != "" {
		return s.accessOf(t)
	}
	if _, pw, ok := r.BasicAuth(); ok {
		return s.accessOf(pw)
	}
	auth := r.Header.Get("Authorization")
	for _, p := range []string{"token ", "Token ", "bearer ", "Bearer "} {
		if t, ok := strings.CutPrefix(auth, p); ok {
			return s.accessOf(strings.TrimSpace(t))
		}
	}
	return s.accessOf("")
}

// hooksOf lists the hooks of repo ("" = every hook; a hook of every repository counts for each) of one dialect ("" or
// "github" for GitHub's), with their ids, for the dialects' hook list
// endpoints.
func (s *Sim) hooksOf(repo, dialectName string) []listedHook {
	hs := &s.hooks
	hs.mu.Lock()
	defer hs.mu.Unlock()
	var out []listedHook
	for _, q := range hs.list {
		sameDialect := q.hook.Dialect == dialectName || (isGitHubHook(q.hook) && (dialectName == "" || dialectName == "github"))
		if sameDialect && !q.hook.System && (repo == "" || q.hook.Repo == "" || q.hook.Repo == repo) {
			out = append(out, listedHook{id: q.id, hook: q.hook})
		}
	}
	return out
}

type listedHook struct {
	id   int64
	hook Hook
}

// events is the hook's event list, or def when the test set none: the
// events docs/configuration.md ("Platform setup") tells users to select.
func (h Hook) events(def ...string) []string {
	if h.Events != nil {
		return h.Events
	}
	return def
}
