package trackersim

import (
	"hash/fnv"
	"net/http"
	"strings"
)

// The GitLab endpoints `agentsmithd check` reads: the token's user, the
// project with the user's access level, one label, and the project hooks.

// glAccessLevel maps a sim role onto GitLab's access levels
// (https://docs.gitlab.com/api/members/#roles): Guest 10, Reporter 20,
// Developer 30, Maintainer 40.
var glAccessLevel = map[string]int{RoleRead: 10, RoleTriage: 20, RoleWrite: 30, RoleAdmin: 40}

func (s *Sim) gitlabCheckRoutes(mux *http.ServeMux) {
	// GET /user (https://docs.gitlab.com/api/users/#get-the-current-user):
	// not project-scoped, so it bypasses serveGitLab's project lookup.
	mux.HandleFunc("GET "+glAPI+"/user", func(w http.ResponseWriter, r *http.Request) {
		s.countCall("GET " + glAPI + "/user")
		if !s.glAuthenticate(r) {
			glMessage(w, http.StatusUnauthorized, "401 Unauthorized")
			return
		}
		a := s.requestAccess(r)
		writeJSON(w, http.StatusOK, map[string]any{"id": userID(a.Login), "username": a.Login, "name": a.Login,
			"state": "active", "web_url": s.requestBase(r) + "/" + a.Login})
	})
	s.glRoute(mux, "GET", "/projects/{id}", s.glGetProject)
	s.glRoute(mux, "GET", "/projects/{id}/labels/{label}", s.glGetLabel)
	s.glRoute(mux, "GET", "/projects/{id}/hooks", s.glListHooks)
	s.glGroupRoute(mux, "GET", "/groups/{id}/hooks", s.glListGroupHooks)
}

// glGetProject is "Get a single project"
// (https://docs.gitlab.com/api/projects/#get-a-single-project); its
// permissions.project_access is the token user's membership.
func (s *Sim) glGetProject(w http.ResponseWriter, r *http.Request, c *glCall) {
	id, created, _ := s.store.repoInfo(c.repo)
	name := c.repo[strings.LastIndexByte(c.repo, '/')+1:]
	level := glAccessLevel[s.requestAccess(r).Role]
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "name": name, "path": name, "path_with_namespace": c.repo,
		"web_url": c.base + "/?repo=" + c.repo, "created_at": created.UTC().Format("2006-01-02T15:04:05.000Z"),
		"issues_enabled": true,
		"permissions": map[string]any{"project_access": map[string]int{"access_level": level, "notification_level": 3},
			"group_access": nil},
	})
}

// glGetLabel is "Get a single project label"; label_id may be the name
// (https://docs.gitlab.com/api/labels/#get-a-single-project-label).
func (s *Sim) glGetLabel(w http.ResponseWriter, r *http.Request, c *glCall) {
	ls, _ := s.store.repoLabels(c.repo)
	for _, l := range ls {
		if l.name == r.PathValue("label") {
			writeJSON(w, http.StatusOK, map[string]any{"id": l.id, "name": l.name, "color": "#" + l.color,
				"description": nil, "open_issues_count": 0, "subscribed": false, "priority": nil, "is_project_label": true})
			return
		}
	}
	glMessage(w, http.StatusNotFound, "404 Label Not Found")
}

// glListHooks is "List webhooks for a project", Maintainer role required
// (https://docs.gitlab.com/api/project_webhooks/); below it GitLab answers
// 403. The token is never returned; glHookJSON says what a hook holds.
func (s *Sim) glListHooks(w http.ResponseWriter, r *http.Request, c *glCall) {
	if !atLeast(s.requestAccess(r).Role, RoleAdmin) {
		glMessage(w, http.StatusForbidden, "403 Forbidden")
		return
	}
	id, _, _ := s.store.repoInfo(c.repo)
	// The project's own hooks only: a group's are listed under the group,
	// though they fire for the project too.
	out := []map[string]any{}
	for _, h := range s.hooksOf(c.repo, "gitlab") {
		if h.hook.Repo != "" {
			out = append(out, glHookJSON(h, "project_id", id))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// glListGroupHooks is "List group hooks", Owner role required
// (https://docs.gitlab.com/api/group_webhooks/#list-group-hooks; the sim's
// highest role, RoleAdmin, stands for it); below it GitLab answers 403. A
// hook of every repository (Hook.Repo "") is a hook of each top-level
// group: it fires for every project below it.
func (s *Sim) glListGroupHooks(w http.ResponseWriter, r *http.Request, c *glCall) {
	if !atLeast(s.requestAccess(r).Role, RoleAdmin) {
		glMessage(w, http.StatusForbidden, "403 Forbidden")
		return
	}
	out := []map[string]any{}
	if !strings.Contains(c.repo, "/") {
		for _, h := range s.hooksOf("", "gitlab") {
			if h.hook.Repo == "" {
				out = append(out, glHookJSON(h, "group_id", glGroupID(c.repo)))
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// glHookJSON is a hook as the hook lists return it; the token is never
// returned. Each trigger is a boolean of its own, comments among them:
// "note_events" and "confidential_note_events" beside "issues_events"
// (https://docs.gitlab.com/api/project_webhooks/#list-webhooks-for-a-project,
// https://docs.gitlab.com/api/group_webhooks/#list-group-hooks). A Hook's
// Events name the flags set; nil sets those docs/configuration.md asks
// for, issues_events and note_events.
func glHookJSON(h listedHook, parentKey string, parentID int64) map[string]any {
	hook := map[string]any{"id": h.id, "url": h.hook.URL, parentKey: parentID, "push_events": false,
		"issues_events": false, "confidential_issues_events": false, "merge_requests_events": false,
		"tag_push_events": false, "note_events": false, "confidential_note_events": false,
		"job_events": false, "pipeline_events": false, "wiki_page_events": false, "enable_ssl_verification": true,
		"alert_status": "executable", "disabled_until": nil}
	for _, e := range h.hook.events("issues_events", "note_events") {
		hook[e] = true
	}
	return hook
}

// glGroupID is a stable id for a group path: the sim keeps no groups, only
// the projects below them.
func glGroupID(path string) int64 {
	f := fnv.New32a()
	_, _ = f.Write([]byte(strings.ToLower(path)))
	return int64(f.Sum32())
}
