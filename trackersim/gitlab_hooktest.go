package trackersim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// GitLab's webhook tests, the test deliveries `agentsmithd check --webhook`
// asks for:
//
//   - Trigger a test project webhook,
//     POST /projects/:id/hooks/:hook_id/test/:trigger
//     (https://docs.gitlab.com/api/project_webhooks/#trigger-a-test-project-webhook,
//     added by gitlab-org/gitlab!147656 for gitlab-org/gitlab#25329);
//     Maintainer role, as the hook list (403 below it).
//   - Trigger a test group webhook, POST /groups/:id/hooks/:hook_id/test/:trigger
//     (https://docs.gitlab.com/api/group_webhooks/#trigger-a-test-group-hook,
//     gitlab-org/gitlab#455589); Owner role.
//
// The test "performs an HTTP request to the webhook receiver and waits for
// the response" (gitlab-org/gitlab!150066): a 2xx from the receiver is
// answered 201 {"message":"201 Created"}, anything else 422 with the
// receiver's answer or the connection error as message. Tests are rate
// limited to 5 a minute per user for a given project or group, all its
// webhooks sharing the limit
// (https://docs.gitlab.com/administration/settings/rate-limit-on-webhook-operations/);
// over it GitLab answers 429 "This endpoint has been requested too many
// times. Try again later.".
//
// The trigger names the event to send. The sim sends push_events and
// tag_push_events, a push of the project with no commits (what GitLab
// sends for a repository without commits: its sample push data,
// https://docs.gitlab.com/user/project/integrations/webhook_events/#push-events);
// the other triggers, which need the project's own issues, notes or
// pipelines, are answered 400 as an unknown trigger.

// glHookTestLimit is the default webhook test rate limit, per minute.
const glHookTestLimit = 5

var glTestTriggers = map[string]string{"push_events": "push", "tag_push_events": "tag_push"}

func (s *Sim) gitlabHookTestRoutes(mux *http.ServeMux) {
	s.glRoute(mux, "POST", "/projects/{id}/hooks/{hook_id}/test/{trigger}", func(w http.ResponseWriter, r *http.Request, c *glCall) {
		s.glTestHook(w, r, c, "project", RoleAdmin)
	})
	s.glGroupRoute(mux, "POST", "/groups/{id}/hooks/{hook_id}/test/{trigger}", func(w http.ResponseWriter, r *http.Request, c *glCall) {
		s.glTestHook(w, r, c, "group", RoleAdmin)
	})
}

// glTestHook tests the hook of a project or (kind "group") a top-level
// group, whose hooks are the sim's hooks of every repository.
func (s *Sim) glTestHook(w http.ResponseWriter, r *http.Request, c *glCall, kind, role string) {
	if !atLeast(s.requestAccess(r).Role, role) {
		glMessage(w, http.StatusForbidden, "403 Forbidden")
		return
	}
	id, _ := strconv.ParseInt(r.PathValue("hook_id"), 10, 64)
	q, ok := s.hookByID(id, "gitlab")
	if ok && kind == "project" {
		ok = strings.EqualFold(q.hook.Repo, c.repo)
	} else if ok {
		ok = q.hook.Repo == "" && !strings.Contains(c.repo, "/")
	}
	if !ok {
		glMessage(w, http.StatusNotFound, "404 Not found")
		return
	}
	trigger := r.PathValue("trigger")
	objectKind, known := glTestTriggers[trigger]
	if !known {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "trigger does not have a valid value"})
		return
	}
	if !s.hookTests.allow(kind+"|"+strings.ToLower(c.repo)+"|"+s.requestAccess(r).Login, s.clock(), glHookTestLimit, time.Minute) {
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"message": map[string]string{
			"error": "This endpoint has been requested too many times. Try again later."}})
		return
	}
	repo := q.hook.Repo
	if repo == "" {
		repo = c.repo + "/sample"
	}
	d := s.glTestPush(q, repo, objectKind)
	status, body, err := s.deliverNow(r.Context(), q, d)
	switch {
	case err != nil:
		glMessage(w, http.StatusUnprocessableEntity, "Hook execution failed: "+err.Error())
	case status/100 != 2:
		glMessage(w, http.StatusUnprocessableEntity, body)
	default:
		glMessage(w, http.StatusCreated, "201 Created")
	}
}

// glTestPush is a push (or tag push) of repo without commits, with the
// headers of every GitLab delivery.
func (s *Sim) glTestPush(q *hookQueue, repo, objectKind string) outgoing {
	base := s.base()
	id, _, _ := s.store.repoInfo(repo)
	web := base + "/gitlab/" + repo
	name := repo[strings.LastIndexByte(repo, '/')+1:]
	ns := repo[:max(strings.LastIndexByte(repo, '/'), 0)]
	zero := strings.Repeat("0", 40)
	ref := "refs/heads/main"
	event := "Push Hook"
	if objectKind == "tag_push" {
		ref, event = "refs/tags/v1.0.0", "Tag Push Hook"
	}
	p := map[string]any{
		"object_kind": objectKind, "event_name": objectKind, "before": zero, "after": zero, "ref": ref,
		"ref_protected": true, "checkout_sha": nil, "user_id": userID(humanActor.login), "user_name": humanActor.login,
		"user_username": humanActor.login, "user_email": "", "project_id": id,
		"project": glHookProject{ID: id, Name: name, WebURL: web, GitSSHURL: "git@sim:" + repo + ".git",
			GitHTTPURL: web + ".git", Namespace: ns, PathWithNamespace: repo, DefaultBranch: "main", Homepage: web,
			URL: "git@sim:" + repo + ".git", SSHURL: "git@sim:" + repo + ".git", HTTPURL: web + ".git"},
		"commits": []any{}, "total_commits_count": 0,
		"repository": map[string]any{"name": name, "url": "git@sim:" + repo + ".git", "description": nil, "homepage": web},
	}
	body, _ := json.Marshal(p)
	return s.glOutgoing(event, fmt.Sprintf("test|%d|%d", q.id, s.reqSeq.Add(1)), body, snapshot{repo: repo, repoID: id}, q.id, q.hook)
}
