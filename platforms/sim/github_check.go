package sim

import (
	"net/http"
	"strconv"
	"strings"
)

// The GitHub endpoints `agentsmithd check` reads besides the ones the daemon
// uses: who the token is, its role on the repository, and the repository's
// hooks.

const docsRepoHooks = "https://docs.github.com/rest/repos/webhooks#list-repository-webhooks"

func (s *Sim) githubCheckRoutes(mux *http.ServeMux) {
	s.ghRoute(mux, "GET", "/user", "https://docs.github.com/rest/users/users#get-the-authenticated-user", false,
		func(w http.ResponseWriter, r *http.Request, c *ghCall) {
			a := s.requestAccess(r)
			s.ghScopes(w, a)
			writeJSON(w, http.StatusOK, s.ghUser(c.base, a.Login))
		})
	s.ghRoute(mux, "GET", "/repos/{owner}/{repo}/hooks", docsRepoHooks, false, s.ghListHooks)
	s.ghRoute(mux, "GET", "/repos/{owner}/{repo}/collaborators/{username}/permission", ghPermissionDoc, false, s.ghCollaboratorPermission)
	s.ghRoute(mux, "GET", "/orgs/{org}/teams/{team_slug}/memberships/{username}", ghTeamMembershipDoc, false, s.ghTeamMembership)
	s.ghRoute(mux, "GET", "/repos/{owner}/{repo}/issues/{number}/events", ghIssueEventsDoc, false, s.ghIssueEvents)
}

// ghScopes sends X-OAuth-Scopes, which GitHub sends for classic tokens only
// (https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/scopes-for-oauth-apps#checking-scopes).
func (s *Sim) ghScopes(w http.ResponseWriter, a Access) {
	if a.Scopes != nil {
		w.Header().Set("X-OAuth-Scopes", strings.Join(a.Scopes, ", "))
	}
}

// ghPermissions is the "permissions" object of GET /repos/{o}/{r} for the
// request's token: each role implies the ones below it
// (https://docs.github.com/en/organizations/managing-user-access-to-your-organizations-repositories/managing-repository-roles/repository-roles-for-an-organization).
func (s *Sim) ghPermissions(w http.ResponseWriter, r *http.Request) map[string]bool {
	a := s.requestAccess(r)
	s.ghScopes(w, a)
	return map[string]bool{
		"pull": true, "triage": atLeast(a.Role, RoleTriage), "push": atLeast(a.Role, RoleWrite),
		"maintain": atLeast(a.Role, RoleAdmin), "admin": atLeast(a.Role, RoleAdmin),
	}
}

// ghHook is a repository webhook as "List repository webhooks" returns it.
// GitHub never returns a hook's secret: config.secret reads "********"
// when one is set.
type ghHook struct {
	Type   string       `json:"type"`
	ID     int64        `json:"id"`
	Name   string       `json:"name"`
	Active bool         `json:"active"`
	Events []string     `json:"events"`
	Config ghHookConfig `json:"config"`
	URL    string       `json:"url"`
}

type ghHookConfig struct {
	URL         string `json:"url"`
	ContentType string `json:"content_type"`
	InsecureSSL string `json:"insecure_ssl"`
	Secret      string `json:"secret,omitempty"`
}

// ghListHooks needs admin on the repository (the docs' "Repository
// webhooks" permission); without it GitHub answers 404, not 403, as users
// report (dwyl/tudo#211, PyGithub/PyGithub#666).
func (s *Sim) ghListHooks(w http.ResponseWriter, r *http.Request, c *ghCall) {
	if _, _, ok := s.store.repoInfo(c.repo); !ok || !atLeast(s.requestAccess(r).Role, RoleAdmin) {
		writeGHError(w, http.StatusNotFound, "Not Found", c.doc)
		return
	}
	out := []ghHook{}
	for _, h := range s.hooksOf(c.repo, "github") {
		gh := ghHook{Type: "Repository", ID: h.id, Name: "web", Active: true, Events: h.hook.events("issues"),
			Config: ghHookConfig{URL: h.hook.URL, ContentType: "json", InsecureSSL: "0"},
			URL:    apiRepoURL(c.base, c.repo) + "/hooks/" + strconv.FormatInt(h.id, 10)}
		if h.hook.Secret != "" {
			gh.Config.Secret = "********"
		}
		out = append(out, gh)
	}
	writeJSON(w, http.StatusOK, out)
}
