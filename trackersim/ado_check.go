package trackersim

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// The Azure DevOps endpoints `agentsmithd check` reads: connectionData,
// one project, and the organization's service hook subscriptions.

func (s *Sim) adoCheckRoutes(mux *http.ServeMux) {
	const org = adoPrefix + "{org}"
	s.adoRoute(mux, "GET", org+"/_apis/connectionData", false, s.adoConnectionData)
	s.adoRoute(mux, "GET", org+"/_apis/projects/{project}", true, s.adoGetProject)
	s.adoRoute(mux, "GET", org+"/_apis/projects", false, s.adoListProjects)
	s.adoRoute(mux, "GET", org+"/_apis/hooks/subscriptions", false, s.adoListSubscriptions)
	s.adoRoute(mux, "GET", org+"/_apis/identities", false, s.adoReadIdentities)
}

// adoProjectID is a project's GUID, derived from its store id.
func adoProjectID(id int64) string { return fmt.Sprintf("6ce954b1-ce1f-45d1-b94d-%012x", id) }

// adoConnectionData: GET {org}/_apis/connectionData, the location service's
// answer naming the authenticated identity (what the SDK's
// location.GetConnectionData returns).
func (s *Sim) adoConnectionData(w http.ResponseWriter, r *http.Request, _ *adoCall) {
	// The identity is the one webhooks name the same login with
	// (revisedBy): its id and unique name.
	a := s.requestAccess(r)
	id := adoIdentityOf(a.Login)
	user := map[string]any{"id": id.ID, "providerDisplayName": a.Login,
		"isActive": true, "properties": map[string]any{
			"Account": map[string]string{"$type": "System.String", "$value": id.UniqueName}}}
	writeJSON(w, http.StatusOK, map[string]any{"authenticatedUser": user, "authorizedUser": user,
		"instanceId": "a1b2c3d4-0000-0000-0000-000000000000", "deploymentType": "hosted"})
}

// adoGetProject: GET {org}/_apis/projects/{projectId}
// (https://learn.microsoft.com/rest/api/azure/devops/core/projects/get);
// an unknown project is serveADO's TF200016 404.
func (s *Sim) adoGetProject(w http.ResponseWriter, _ *http.Request, c *adoCall) {
	id, _, _ := s.store.repoInfo(c.repo)
	name := c.repo[strings.IndexByte(c.repo, '/')+1:]
	writeJSON(w, http.StatusOK, map[string]any{"id": adoProjectID(id), "name": name, "state": "wellFormed",
		"visibility": "private", "revision": 1, "url": c.base + "/_apis/projects/" + adoProjectID(id)})
}

// adoListProjects: GET {org}/_apis/projects
// (https://learn.microsoft.com/rest/api/azure/devops/core/projects/list):
// {count, value} of the organisation's projects ordered by name, at most
// $top (default 100) a page; when more remain the x-ms-continuationtoken
// header carries the token the next page's continuationToken passes back
// (opaque to clients; here the offset).
func (s *Sim) adoListProjects(w http.ResponseWriter, r *http.Request, c *adoCall) {
	repos, _ := s.store.ownerRepos(c.org)
	q := r.URL.Query()
	top := 100
	if v, err := strconv.Atoi(q.Get("$top")); err == nil && v > 0 {
		top = v
	}
	from := 0
	if v, err := strconv.Atoi(q.Get("continuationToken")); err == nil && v > 0 {
		from = min(v, len(repos))
	}
	to := min(from+top, len(repos))
	if to < len(repos) {
		w.Header().Set("X-Ms-Continuationtoken", strconv.Itoa(to))
	}
	out := make([]map[string]any, 0, to-from)
	for _, rp := range repos[from:to] {
		name := rp.fullName[strings.IndexByte(rp.fullName, '/')+1:]
		out = append(out, map[string]any{"id": adoProjectID(rp.id), "name": name, "state": "wellFormed",
			"visibility": "private", "revision": 1, "url": c.base + "/_apis/projects/" + adoProjectID(rp.id)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(out), "value": out})
}

// adoListSubscriptions: GET {org}/_apis/hooks/subscriptions
// (https://learn.microsoft.com/rest/api/azure/devops/hooks/subscriptions/list):
// one subscription per event type, Web Hooks consumer, the URL in
// consumerInputs. Viewing subscriptions needs the service hooks "View
// subscriptions" permission (project administrators by default); what a
// PAT without it gets is not documented: the sim answers 403 for roles below
// admin. Hook.Events, when set, are the event types subscribed, one
// subscription each with its "eventType"; unset, those docs/configuration.md
// asks for: workitem.created, workitem.updated and workitem.commented
// (https://learn.microsoft.com/azure/devops/service-hooks/events).
func (s *Sim) adoListSubscriptions(w http.ResponseWriter, r *http.Request, c *adoCall) {
	if !atLeast(s.requestAccess(r).Role, RoleAdmin) {
		adoError(w, http.StatusForbidden, "UnauthorizedRequestException",
			"TF400813: The user is not authorized to access this resource.")
		return
	}
	out := []map[string]any{}
	for _, h := range s.hooksOf("", "ado") {
		projectID := ""
		if h.hook.Repo != "" {
			if !strings.EqualFold(strings.SplitN(h.hook.Repo, "/", 2)[0], c.org) {
				continue
			}
			id, _, _ := s.store.repoInfo(h.hook.Repo)
			projectID = adoProjectID(id)
		}
		for i, ev := range h.hook.events("workitem.created", "workitem.updated", "workitem.commented") {
			out = append(out, map[string]any{"id": fmt.Sprintf("%08x-0000-0000-0000-%012x", h.id, i),
				"publisherId": "tfs", "eventType": ev, "consumerId": "webHooks", "consumerActionId": "httpRequest",
				"status": "enabled", "publisherInputs": map[string]string{"projectId": projectID},
				"consumerInputs": map[string]string{"url": h.hook.URL, "resourceDetailsToSend": "all"}})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(out), "value": out})
}
