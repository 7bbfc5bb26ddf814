package gitlab

import (
	"context"
	"errors"
	"path"
	"strings"

	gl "github.com/xanzy/go-gitlab"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// The SDK calls `agentsmithd check` makes (all GETs but the webhook test of
// check --webhook), kept beside sdk.go so the SDK stays behind this
// package's two sdk files.

// currentUser is GET /user (https://docs.gitlab.com/api/users/#get-the-current-user).
func (s *sdk) currentUser(ctx context.Context) (string, error) {
	u, _, err := s.c.Users.CurrentUser(gl.WithContext(ctx))
	if err != nil {
		return "", err
	}
	return u.Username, nil
}

// accessLevel is the token user's effective access level on the project:
// the higher of its project and group membership
// (GET /projects/:id, "permissions", https://docs.gitlab.com/api/projects/#get-a-single-project).
func (s *sdk) accessLevel(ctx context.Context, project string) (level int, path string, err error) {
	p, _, err := s.c.Projects.GetProject(project, nil, gl.WithContext(ctx))
	if err != nil {
		return 0, "", err
	}
	if p.Permissions != nil {
		if a := p.Permissions.ProjectAccess; a != nil {
			level = int(a.AccessLevel)
		}
		if a := p.Permissions.GroupAccess; a != nil && int(a.AccessLevel) > level {
			level = int(a.AccessLevel)
		}
	}
	return level, p.PathWithNamespace, nil
}

// label is GET /projects/:id/labels/:label_id, which takes the name too
// (https://docs.gitlab.com/api/labels/#get-a-single-project-label).
func (s *sdk) label(ctx context.Context, project, name string) error {
	_, _, err := s.c.Labels.GetLabel(project, name, gl.WithContext(ctx))
	return err
}

// projectHooks is GET /projects/:id/hooks, every page; Maintainer only
// (https://docs.gitlab.com/api/project_webhooks/#list-webhooks-for-a-project).
// A hook GitLab disabled after failing deliveries has alert_status
// "disabled" or "temporarily_disabled" (gitlab-org/gitlab!166329).
func (s *sdk) projectHooks(ctx context.Context, project string) ([]platforms.Hook, error) {
	return allHooks(func(page int) ([]platforms.Hook, *gl.Response, error) {
		hooks, resp, err := s.c.Projects.ListProjectHooks(project, &gl.ListProjectHooksOptions{PerPage: 100, Page: page}, gl.WithContext(ctx))
		var out []platforms.Hook
		for _, h := range hooks {
			out = append(out, hookOf(h.URL, h.AlertStatus, h.IssuesEvents, h.ConfidentialIssuesEvents, h.NoteEvents))
		}
		return out, resp, err
	})
}

// groupHooks is GET /groups/:id/hooks, every page; Owner only
// (https://docs.gitlab.com/api/group_webhooks/#list-group-hooks). A group
// hook fires for every project below the group, subgroups included.
func (s *sdk) groupHooks(ctx context.Context, group string) ([]platforms.Hook, error) {
	return allHooks(func(page int) ([]platforms.Hook, *gl.Response, error) {
		hooks, resp, err := s.c.Groups.ListGroupHooks(group, &gl.ListGroupHooksOptions{PerPage: 100, Page: page}, gl.WithContext(ctx))
		var out []platforms.Hook
		for _, h := range hooks {
			out = append(out, hookOf(h.URL, h.AlertStatus, h.IssuesEvents, h.ConfidentialIssuesEvents, h.NoteEvents))
		}
		return out, resp, err
	})
}

// allHooks follows a hook list's pages from the first.
func allHooks(page func(int) ([]platforms.Hook, *gl.Response, error)) ([]platforms.Hook, error) {
	var out []platforms.Hook
	for p := 1; ; {
		hooks, resp, err := page(p)
		if err != nil {
			return nil, err
		}
		out = append(out, hooks...)
		if resp.NextPage == 0 {
			return out, nil
		}
		p = resp.NextPage
	}
}

// hookOf is a project or group hook as the check reads it.
func hookOf(url, alertStatus string, issues, confidential, notes bool) platforms.Hook {
	var events []string
	if notes {
		events = append(events, "note_events")
	}
	if issues {
		events = append(events, "issues_events")
	}
	if confidential {
		events = append(events, "confidential_issues_events")
	}
	return platforms.Hook{URL: url, Active: alertStatus == "" || alertStatus == "executable", Events: events}
}

// statusOf is the HTTP status of a go-gitlab error (go-gitlab turns a 404
// into ErrNotFound without the response); 0 when no answer came.
func statusOf(err error) int {
	if errors.Is(err, gl.ErrNotFound) {
		return 404
	}
	var er *gl.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}

// idHook is a project or group hook with its id, for the webhook test.
type idHook struct {
	id     int
	url    string
	group  string // the group whose hook it is; "" for the project's own
	active bool
}

// hooksWithIDs lists the project's hooks, then those of each group above
// it (as checkHooks reads them); a list the token may not read (403, 404)
// is skipped and counted in hidden.
func (s *sdk) hooksWithIDs(ctx context.Context, project string) (hooks []idHook, hidden int, err error) {
	// each appends one list's hooks, every page, to hooks.
	each := func(group string, page func(p int) ([]idHook, *gl.Response, error)) error {
		for p := 1; p > 0; {
			hs, resp, err := page(p)
			if c := statusOf(err); c == 403 || c == 404 {
				hidden++
				return nil
			} else if err != nil {
				return err
			}
			for _, h := range hs {
				h.group = group
				hooks = append(hooks, h)
			}
			p = resp.NextPage
		}
		return nil
	}
	err = each("", func(p int) ([]idHook, *gl.Response, error) {
		hs, resp, err := s.c.Projects.ListProjectHooks(project, &gl.ListProjectHooksOptions{PerPage: 100, Page: p}, gl.WithContext(ctx))
		var out []idHook
		for _, h := range hs {
			out = append(out, idHook{id: h.ID, url: h.URL, active: h.AlertStatus == "" || h.AlertStatus == "executable"})
		}
		return out, resp, err
	})
	for g := path.Dir(project); err == nil && g != "." && g != "/"; g = path.Dir(g) {
		err = each(g, func(p int) ([]idHook, *gl.Response, error) {
			hs, resp, err := s.c.Groups.ListGroupHooks(g, &gl.ListGroupHooksOptions{PerPage: 100, Page: p}, gl.WithContext(ctx))
			var out []idHook
			for _, h := range hs {
				out = append(out, idHook{id: h.ID, url: h.URL, active: h.AlertStatus == "" || h.AlertStatus == "executable"})
			}
			return out, resp, err
		})
	}
	return hooks, hidden, err
}

// testHook is "Trigger a test project webhook" (Projects.TriggerTestProjectHook,
// POST /projects/:id/hooks/:hook_id/test/push_events,
// https://docs.gitlab.com/api/project_webhooks/#trigger-a-test-project-webhook)
// or its group twin (Groups.TriggerTestGroupHook,
// https://docs.gitlab.com/api/group_webhooks/#trigger-a-test-group-hook).
// push_events is the trigger whose test needs nothing of the project (a
// repository without commits sends GitLab's sample push); the daemon
// answers it 202 ignored once its secret verifies.
func (s *sdk) testHook(ctx context.Context, project string, h idHook) error {
	if h.group != "" {
		_, err := s.c.Groups.TriggerTestGroupHook(h.group, h.id, gl.GroupHookTriggerPush, gl.WithContext(ctx))
		return err
	}
	_, err := s.c.Projects.TriggerTestProjectHook(project, h.id, gl.ProjectHookEventPush, gl.WithContext(ctx))
	return err
}

// errorMessage is the message of a go-gitlab error response ("" if none).
func errorMessage(err error) string {
	var er *gl.ErrorResponse
	if errors.As(err, &er) {
		// go-gitlab wraps the answer's "message" as "{message: …}".
		return strings.TrimSuffix(strings.TrimPrefix(er.Message, "{message: "), "}")
	}
	return ""
}
