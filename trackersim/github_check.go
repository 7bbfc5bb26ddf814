package trackersim

import (
	"net/http"
	"strconv"
	"strings"
)

// The GitHub endpoints `agentsmithd check` reads besides the ones the daemon
// uses: who the token is, its role on the repository, and the repository's
// hooks.

const (
	docsRepoHooks = "https://docs.github.com/rest/repos/webhooks#list-repository-webhooks"
	docsOrgHooks  = "https://docs.github.com/rest/orgs/webhooks#list-organization-webhooks"
)

func (s *Sim) githubCheckRoutes(mux *http.ServeMux) {
	s.ghRoute(mux, "GET", "/user", "https://docs.github.com/rest/users/users#get-the-authenticated-user", false,
		func(w http.ResponseWriter, r *http.Request, c *ghCall) {
			a := s.requestAccess(r)
			s.ghScopes(w, a)
			writeJSON(w, http.StatusOK, s.ghUser(c.base, a.Login))
		})
	s.ghRoute(mux, "GET", "/repos/{owner}/{repo}/hooks", docsRepoHooks, false, s.ghListHooks)
	s.ghRoute(mux, "GET", "/orgs/{org}/hooks", docsOrgHooks, false, s.ghListOrgHooks)
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
	// A repository's list holds its own hooks only: an organisation's
	// hooks are listed under the organisation, though they fire for the
	// repository too.
	out := []ghHook{}
	for _, h := range s.hooksOf(c.repo, "github") {
		if h.hook.Repo != "" {
			out = append(out, ghHookJSON(h, "Repository", apiRepoURL(c.base, c.repo)))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// ghListOrgHooks is "List organization webhooks": the hooks of every
// repository (Hook.Repo ""), for an organisation owner (the admin:org_hook
// scope on a classic token); anyone else, and a login that is no
// organisation, gets 404, as GitHub hides what a token may not see.
func (s *Sim) ghListOrgHooks(w http.ResponseWriter, r *http.Request, c *ghCall) {
	org := r.PathValue("org")
	repos, user := s.store.ownerRepos(org)
	if user || len(repos) == 0 || !atLeast(s.requestAccess(r).Role, RoleAdmin) {
		writeGHError(w, http.StatusNotFound, "Not Found", c.doc)
		return
	}
	out := []ghHook{}
	for _, h := range s.hooksOf("", "github") {
		if h.hook.Repo == "" {
			out = append(out, ghHookJSON(h, "Organization", c.base+"/orgs/"+org))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// ghHookJSON is a hook as the hook lists return it, under parent's URL.
// Its "events" array names the webhook events it is subscribed to
// (https://docs.github.com/en/rest/repos/webhooks#list-repository-webhooks;
// names from https://docs.github.com/en/webhooks/webhook-events-and-payloads:
// "issues", "issue_comment", "*" for every event); by default those
// docs/configuration.md asks for.
func ghHookJSON(h listedHook, kind, parent string) ghHook {
	gh := ghHook{Type: kind, ID: h.id, Name: "web", Active: true, Events: h.hook.events("issues", "issue_comment"),
		Config: ghHookConfig{URL: h.hook.URL, ContentType: "json", InsecureSSL: "0"},
		URL:    parent + "/hooks/" + strconv.FormatInt(h.id, 10)}
	if h.hook.Secret != "" {
		gh.Config.Secret = "********"
	}
	return gh
}
