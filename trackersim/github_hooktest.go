package trackersim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// GitHub's hook pings, the test deliveries `agentsmithd check --webhook`
// asks for:
//
//   - Ping a repository webhook, POST /repos/{owner}/{repo}/hooks/{hook_id}/pings
//     (https://docs.github.com/rest/repos/webhooks#ping-a-repository-webhook):
//     "This will trigger a ping event to be sent to the hook", answered
//     204 No Content; the repository's admins only, 404 otherwise, as the
//     hook list (ghListHooks).
//   - Ping an organization webhook, POST /orgs/{org}/hooks/{hook_id}/pings
//     (https://docs.github.com/rest/orgs/webhooks#ping-an-organization-webhook):
//     the same, for organisation owners (a classic token needs
//     admin:org_hook).
//
// The ping event (https://docs.github.com/webhooks/webhook-events-and-payloads#ping)
// carries zen, hook_id, hook (the hook's configuration, without its
// secret), sender, and repository for a repository hook or organization
// for an organisation hook; it is signed with the hook's secret like every
// delivery.

const (
	docsPingRepoHook = "https://docs.github.com/rest/repos/webhooks#ping-a-repository-webhook"
	docsPingOrgHook  = "https://docs.github.com/rest/orgs/webhooks#ping-an-organization-webhook"
)

func (s *Sim) githubHookTestRoutes(mux *http.ServeMux) {
	s.ghRoute(mux, "POST", "/repos/{owner}/{repo}/hooks/{hook_id}/pings", docsPingRepoHook, false, s.ghPingRepoHook)
	s.ghRoute(mux, "POST", "/orgs/{org}/hooks/{hook_id}/pings", docsPingOrgHook, false, s.ghPingOrgHook)
}

func (s *Sim) ghPingRepoHook(w http.ResponseWriter, r *http.Request, c *ghCall) {
	id, _ := strconv.ParseInt(r.PathValue("hook_id"), 10, 64)
	q, ok := s.hookByID(id, "github")
	if _, _, known := s.store.repoInfo(c.repo); !known || !ok || q.hook.Repo != c.repo || !atLeast(s.requestAccess(r).Role, RoleAdmin) {
		writeGHError(w, http.StatusNotFound, "Not Found", c.doc)
		return
	}
	s.sendTest(q, s.githubPing(q))
	w.WriteHeader(http.StatusNoContent)
}

func (s *Sim) ghPingOrgHook(w http.ResponseWriter, r *http.Request, c *ghCall) {
	org := r.PathValue("org")
	id, _ := strconv.ParseInt(r.PathValue("hook_id"), 10, 64)
	q, ok := s.hookByID(id, "github")
	repos, user := s.store.ownerRepos(org)
	if !ok || q.hook.Repo != "" || user || len(repos) == 0 || !atLeast(s.requestAccess(r).Role, RoleAdmin) {
		writeGHError(w, http.StatusNotFound, "Not Found", c.doc)
		return
	}
	s.sendTest(q, s.githubOrgPing(q, c.base, org))
	w.WriteHeader(http.StatusNoContent)
}

// githubOrgPing is the ping of an organisation hook: its hook is of type
// Organization and the payload names the organization, no repository.
func (s *Sim) githubOrgPing(q *hookQueue, base, org string) outgoing {
	hookURL := fmt.Sprintf("%s/orgs/%s/hooks/%d", base+"/github", org, q.id)
	hook := map[string]any{
		"type": "Organization", "id": q.id, "name": "web", "active": true, "events": q.hook.events("issues"),
		"config":     map[string]string{"content_type": "json", "insecure_ssl": "0", "url": q.hook.URL},
		"created_at": ghTime(s.clock()), "updated_at": ghTime(s.clock()),
		"url": hookURL, "ping_url": hookURL + "/pings", "deliveries_url": hookURL + "/deliveries",
	}
	p := map[string]any{"zen": "Responsive is better than fast.", "hook_id": q.id, "hook": hook,
		"organization": map[string]any{"login": org, "id": userID(org), "url": base + "/github" + "/orgs/" + org},
		"sender":       s.ghUser(base, humanActor.login)}
	body, _ := json.Marshal(p)
	return outgoing{event: "ping", guid: newGUID(), body: body}
}
