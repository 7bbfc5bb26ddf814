package trackersim

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// The Jira endpoints `agentsmithd check` reads: serverInfo, myself, one
// project, mypermissions, and the site's webhooks.

// jiraRolePermissions is what each sim role holds in every project's
// permission scheme.
var jiraRolePermissions = map[string][]string{
	RoleRead:   {"BROWSE_PROJECTS"},
	RoleTriage: {"BROWSE_PROJECTS", "ADD_COMMENTS"},
	RoleWrite:  {"BROWSE_PROJECTS", "ADD_COMMENTS", "EDIT_ISSUES"},
	RoleAdmin:  {"BROWSE_PROJECTS", "ADD_COMMENTS", "EDIT_ISSUES", "ADMINISTER_PROJECTS", "ADMINISTER"},
}

func (s *Sim) jiraCheckRoutes(mux *http.ServeMux) {
	s.jiraRoute(mux, "GET", "/rest/api/{v}/serverInfo", s.jiraServerInfo)
	s.jiraRoute(mux, "GET", "/rest/api/{v}/myself", s.jiraMyself)
	s.jiraRoute(mux, "GET", "/rest/api/{v}/project/{key}", s.jiraGetProject)
	s.jiraRoute(mux, "GET", "/rest/api/{v}/project/search", s.jiraSearchProjects)
	s.jiraRoute(mux, "GET", "/rest/api/{v}/project", s.jiraListProjects)
	s.jiraRoute(mux, "GET", "/rest/api/{v}/mypermissions", s.jiraMyPermissions)
	s.jiraRoute(mux, "GET", "/rest/api/{v}/user/permission/search", s.jiraUserPermissionSearch)
	s.jiraRoute(mux, "GET", "/rest/api/{v}/user/groups", s.jiraUserGroups)
	s.jiraRoute(mux, "GET", "/rest/api/{v}/user", s.jiraGetUser)
	// Not under /rest/api/{v}: registered directly, authenticated as the
	// rest. Each path exists on the flavours that have it; elsewhere it is
	// an unknown resource, 404 (jiraListWebhooks).
	for _, route := range []struct {
		pattern string
		dc10    bool
	}{{"GET /jira/rest/webhooks/1.0/webhook", false}, {"GET /jira/rest/jira-webhook/1.0/webhooks", true}} {
		mux.HandleFunc(route.pattern, func(w http.ResponseWriter, r *http.Request) {
			s.countCall(route.pattern)
			if !s.jiraAuthenticate(r) {
				jiraError(w, http.StatusUnauthorized, "You are not authenticated. Authentication required to perform this operation.")
				return
			}
			if s.jiraDataCenter10() != route.dc10 {
				// The sim does not reproduce the body of a missing REST
				// resource; the status is what clients branch on.
				http.NotFound(w, r)
				return
			}
			s.jiraListWebhooks(w, r, route.dc10)
		})
	}
}

// jiraServerInfo: GET /rest/api/{2|3}/serverInfo. Cloud's deploymentType
// is "always returned as Cloud" (the v3 reference,
// https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-server-info/);
// self-managed Jira answers "Server" (the constants jira-client libraries
// match, e.g. net.rcarz.jiraclient ServerInfo.SERVER). Whether Data Center
// 9 answers "DataCenter" instead is not documented; the sim says "Server"
// and the check treats anything but "Cloud" as self-managed. The docs
// allow anonymous access; with bad credentials the sim answers 401 like
// every route (no evidence either way). versionNumbers is the version
// split into numbers, as in the reference's example; clients pick the
// Data Center 10 webhook API by its first (n8n's Jira node
// getWebhookEndpoint, getsentry/sentry#90116).
func (s *Sim) jiraServerInfo(w http.ResponseWriter, _ *http.Request, c *jiraCall) {
	kind, version, numbers := "Cloud", "1001.0.0-SNAPSHOT", []int{1001, 0, 0}
	switch {
	case s.jiraDataCenter10():
		kind, version, numbers = "Server", "10.3.6", []int{10, 3, 6}
	case s.jiraDataCenter():
		kind, version, numbers = "Server", "9.12.0", []int{9, 12, 0}
	}
	writeJSON(w, http.StatusOK, map[string]any{"baseUrl": c.base + "/jira", "version": version,
		"versionNumbers": numbers, "deploymentType": kind, "serverTitle": "trackersim"})
}

// jiraMyself: GET /rest/api/{2|3}/myself. Cloud names users by accountId,
// Data Center by name (key).
func (s *Sim) jiraMyself(w http.ResponseWriter, r *http.Request, c *jiraCall) {
	a := s.requestAccess(r)
	out := map[string]any{"displayName": a.Login, "active": true, "self": c.base + "/jira/rest/api/" + c.version + "/myself"}
	if s.jiraDataCenter() {
		out["name"], out["key"] = a.Login, a.Login
	} else {
		// The account id webhooks name the same login with.
		out["accountId"] = jiraUserOf("", a.Login).AccountID
		out["accountType"] = "atlassian"
	}
	writeJSON(w, http.StatusOK, out)
}

// jiraGetProject: GET /rest/api/{2|3}/project/{key}; 404 "No project could
// be found with key" for an unknown key.
func (s *Sim) jiraGetProject(w http.ResponseWriter, r *http.Request, c *jiraCall) {
	key := r.PathValue("key")
	id, _, ok := s.store.repoInfo(key)
	if !ok {
		jiraError(w, http.StatusNotFound, "No project could be found with key '"+key+"'.")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": strconv.FormatInt(id, 10), "key": key, "name": key,
		"self": c.base + "/jira/rest/api/" + c.version + "/project/" + strconv.FormatInt(id, 10), "projectTypeKey": "software"})
}

// jiraProjects are the site's live projects (store keys without "/"; the
// other dialects' repositories have one), by key; archived ones are left
// out, as both listings below do by default.
func (s *Sim) jiraProjects(base, version string) []map[string]any {
	st := s.store
	st.mu.Lock()
	var out []map[string]any
	for key, r := range st.repos {
		if strings.Contains(key, "/") || r.archived {
			continue
		}
		id := strconv.FormatInt(r.id, 10)
		out = append(out, map[string]any{"id": id, "key": key, "name": key, "projectTypeKey": "software",
			"self": base + "/jira/rest/api/" + version + "/project/" + id})
	}
	st.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i]["key"].(string) < out[j]["key"].(string) })
	return out
}

// jiraSearchProjects: GET /rest/api/{2|3}/project/search (Jira Cloud), the
// paginated project list: startAt, maxResults (default 50, at most 100
// here), {startAt, maxResults, total, isLast, values}; live projects only
// unless status says otherwise, which the sim does not serve
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-projects/#api-rest-api-3-project-search-get).
func (s *Sim) jiraSearchProjects(w http.ResponseWriter, r *http.Request, c *jiraCall) {
	all := s.jiraProjects(c.base, c.version)
	q := r.URL.Query()
	start, _ := strconv.Atoi(q.Get("startAt"))
	start = min(max(start, 0), len(all))
	per := 50
	if v, err := strconv.Atoi(q.Get("maxResults")); err == nil && v > 0 {
		per = min(v, 100)
	}
	end := min(start+per, len(all))
	writeJSON(w, http.StatusOK, map[string]any{"startAt": start, "maxResults": per, "total": len(all),
		"isLast": end == len(all), "values": all[start:end]})
}

// jiraListProjects: GET /rest/api/2/project (Jira Data Center), every
// project the user can browse in one array, archived ones left out
// (includeArchived defaults to false)
// (https://docs.atlassian.com/software/jira/docs/api/REST/9.12.0/#api/2/project-getAllProjects).
func (s *Sim) jiraListProjects(w http.ResponseWriter, _ *http.Request, c *jiraCall) {
	writeJSON(w, http.StatusOK, s.jiraProjects(c.base, c.version))
}

// jiraMyPermissions: GET /rest/api/{2|3}/mypermissions?projectKey=&permissions=
// (Cloud requires permissions; unknown project key: 404).
func (s *Sim) jiraMyPermissions(w http.ResponseWriter, r *http.Request, _ *jiraCall) {
	q := r.URL.Query()
	if key := q.Get("projectKey"); key != "" {
		if _, _, ok := s.store.repoInfo(key); !ok {
			jiraError(w, http.StatusNotFound, "No project could be found with key '"+key+"'.")
			return
		}
	}
	want := strings.Split(q.Get("permissions"), ",")
	if q.Get("permissions") == "" && !s.jiraDataCenter() {
		jiraError(w, http.StatusBadRequest, "The 'permissions' query parameter is required.")
		return
	}
	held := map[string]bool{}
	for _, p := range jiraRolePermissions[s.requestAccess(r).Role] {
		held[p] = true
	}
	perms := map[string]any{}
	for _, p := range want {
		if p = strings.TrimSpace(p); p != "" {
			perms[p] = map[string]any{"key": p, "name": p, "type": "PROJECT", "havePermission": held[p]}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"permissions": perms})
}

// jiraListWebhooks lists the site's admin webhooks, Jira administrators
// only; others get 403. A webhook's "events" list names what it sends
// ("jira:issue_updated", "comment_created", the webhooks page's event
// list); unset, those docs/configuration.md asks for: issue created and
// updated, and comment created.
//
// Cloud and Data Center 9: GET /rest/webhooks/1.0/webhook
// (https://developer.atlassian.com/server/jira/platform/webhooks/), each
// {name, url, events, filters, excludeBody, enabled, self}.
//
// Data Center 10 (dc10): the resource moved to GET
// /rest/jira-webhook/1.0/webhooks ("Starting from Jira
// 10.0.x, the URL to webhook resource has changed to
// <JIRA_URL>/rest/jira-webhook/1.0/webhooks", the same webhooks page,
// quoted in getsentry/sentry#92806) and the old path is gone: a 10.x
// site answers it 404 (getsentry/sentry#88722, whose integration broke on
// it). The sim answers the new path 404 on the other flavours too, where
// the resource did not exist yet. The new answer is a plain array of {id, name, url, events,
// active, scopeType, configuration, sslVerificationRequired, createdDate,
// updatedDate}: "active" replaces "enabled" and there is no "self" (the
// Webhook model of jira.js's server client, src/server/models/webhook.ts;
// n8n's JiraWebhook type, "self: Only available for version < 10";
// OpenHands' Jira DC integration reads the GET as a list). The
// configuration holds EXCLUDE_BODY and SECRET (OpenHands registers them
// there; the secret is write-only here, as no source shows it read back);
// the key of the JQL filter inside it is not documented in the sources
// found, and the sim names it FILTERS.
func (s *Sim) jiraListWebhooks(w http.ResponseWriter, r *http.Request, dc10 bool) {
	if !atLeast(s.requestAccess(r).Role, RoleAdmin) {
		jiraError(w, http.StatusForbidden, "You do not have permission to access webhooks.")
		return
	}
	out := []map[string]any{}
	for _, h := range s.hooksOf("", "jira") {
		f := h.hook.JQL
		if f == "" && h.hook.Repo != "" {
			f = "project = " + h.hook.Repo
		}
		name := "hook " + strconv.FormatInt(h.id, 10)
		events := h.hook.events("jira:issue_created", "jira:issue_updated", "comment_created")
		if dc10 {
			conf := map[string]string{"EXCLUDE_BODY": "false"}
			if f != "" {
				conf["FILTERS"] = f
			}
			out = append(out, map[string]any{"id": h.id, "name": name, "url": h.hook.URL, "events": events,
				"active": true, "scopeType": "global", "configuration": conf, "sslVerificationRequired": true,
				"createdDate": 1735689600000, "updatedDate": 1735689600000})
			continue
		}
		out = append(out, map[string]any{"name": name, "url": h.hook.URL, "enabled": true,
			"events":  events,
			"filters": map[string]string{"issue-related-events-section": f}, "excludeBody": false,
			"self": s.requestBase(r) + "/jira/rest/webhooks/1.0/webhook/" + strconv.FormatInt(h.id, 10)})
	}
	writeJSON(w, http.StatusOK, out)
}

// jiraProjectKeys maps every Jira project's key, lower-cased, to the key as
// stored: JQL names projects case-insensitively, and an archived project
// still exists for it.
func (s *Sim) jiraProjectKeys() map[string]string {
	st := s.store
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make(map[string]string, len(st.repos))
	for key := range st.repos {
		if !strings.Contains(key, "/") {
			out[strings.ToLower(key)] = key
		}
	}
	return out
}
