package trackersim

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"
)

// GitLab webhooks: the "Issue Hook" event (work item events,
// https://docs.gitlab.com/user/project/integrations/webhook_events/#work-item-events)
// with GitLab's delivery headers
// (https://docs.gitlab.com/user/project/integrations/webhooks/#delivery-headers).
// GitLab sends one delivery per write, whatever it changed: action is open,
// close, reopen or update, and changes.labels carries the label sets before
// and after. The secret token travels verbatim in X-Gitlab-Token; there is
// no signature.

type glHookUser struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	Username  string `json:"username"`
	AvatarURL string `json:"avatar_url"`
	Email     string `json:"email"`
}

type glHookProject struct {
	ID                int64   `json:"id"`
	Name              string  `json:"name"`
	Description       *string `json:"description"`
	WebURL            string  `json:"web_url"`
	AvatarURL         *string `json:"avatar_url"`
	GitSSHURL         string  `json:"git_ssh_url"`
	GitHTTPURL        string  `json:"git_http_url"`
	Namespace         string  `json:"namespace"`
	VisibilityLevel   int     `json:"visibility_level"`
	PathWithNamespace string  `json:"path_with_namespace"`
	DefaultBranch     string  `json:"default_branch"`
	CIConfigPath      *string `json:"ci_config_path"`
	Homepage          string  `json:"homepage"`
	URL               string  `json:"url"`
	SSHURL            string  `json:"ssh_url"`
	HTTPURL           string  `json:"http_url"`
}

type glHookLabel struct {
	ID          int64   `json:"id"`
	Title       string  `json:"title"`
	Color       string  `json:"color"`
	ProjectID   int64   `json:"project_id"`
	CreatedAt   string  `json:"created_at"`
	UpdatedAt   string  `json:"updated_at"`
	Template    bool    `json:"template"`
	Description *string `json:"description"`
	Type        string  `json:"type"`
	GroupID     *int64  `json:"group_id"`
}

type glHookIssue struct {
	ID                  int64         `json:"id"`
	IID                 int           `json:"iid"`
	Title               string        `json:"title"`
	Description         string        `json:"description"`
	State               string        `json:"state"`
	StateID             int           `json:"state_id"`
	Action              string        `json:"action"`
	URL                 string        `json:"url"`
	AuthorID            int64         `json:"author_id"`
	ProjectID           int64         `json:"project_id"`
	CreatedAt           string        `json:"created_at"`
	UpdatedAt           string        `json:"updated_at"`
	UpdatedByID         int64         `json:"updated_by_id"`
	ClosedAt            *string       `json:"closed_at"`
	Confidential        bool          `json:"confidential"`
	AssigneeIDs         []int64       `json:"assignee_ids"`
	MilestoneID         *int64        `json:"milestone_id"`
	Type                string        `json:"type"`
	Severity            string        `json:"severity"`
	Labels              []glHookLabel `json:"labels"`
	HumanTotalTimeSpent *string       `json:"human_total_time_spent"`
}

type glIssueHook struct {
	ObjectKind       string         `json:"object_kind"`
	EventType        string         `json:"event_type"`
	User             glHookUser     `json:"user"`
	Project          glHookProject  `json:"project"`
	ObjectAttributes glHookIssue    `json:"object_attributes"`
	Labels           []glHookLabel  `json:"labels"`
	Changes          map[string]any `json:"changes"`
	Repository       map[string]any `json:"repository"`
	Assignees        []glHookUser   `json:"assignees"`
}

// glHookTime is the timestamp format of webhook payloads
// ("2013-12-03 17:15:43 UTC").
func glHookTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// gitlabDeliveries builds the one Issue Hook delivery GitLab sends to hook h
// for a write. X-Gitlab-Event-UUID names the event (the same for every hook);
// Idempotency-Key names this hook's delivery and stays the same on retries
// (and on the sim's duplicates).
func (s *Sim) gitlabDeliveries(evs []storeEvent, hookID int64, h Hook) []outgoing {
	rest, c := splitComment(evs)
	var out []outgoing
	if len(rest) > 0 {
		out = s.gitlabIssueHook(rest, hookID, h, "issue", "Issue")
	}
	if c != nil {
		out = append(out, s.gitlabNoteHook(*c, hookID, h)...)
	}
	return out
}

// glNoteHook is the Note Hook payload of a comment on an issue
// (https://docs.gitlab.com/user/project/integrations/webhook_events/#comment-on-an-issue).
type glNoteHook struct {
	ObjectKind       string         `json:"object_kind"`
	EventType        string         `json:"event_type"`
	User             glHookUser     `json:"user"`
	ProjectID        int64          `json:"project_id"`
	Project          glHookProject  `json:"project"`
	ObjectAttributes map[string]any `json:"object_attributes"`
	Repository       map[string]any `json:"repository"`
	Issue            glHookIssue    `json:"issue"`
}

// gitlabNoteHook builds the Note Hook delivery of a new comment.
func (s *Sim) gitlabNoteHook(ev storeEvent, hookID int64, h Hook) []outgoing {
	sn := ev.issue
	issue := s.gitlabIssueHookPayload([]storeEvent{ev}, "issue", "Issue")
	base := s.base()
	p := glNoteHook{ObjectKind: "note", EventType: "note", User: issue.User, ProjectID: sn.repoID, Project: issue.Project,
		ObjectAttributes: map[string]any{"id": ev.comment.id, "note": ev.comment.body, "noteable_type": "Issue",
			"author_id": userID(ev.comment.author), "created_at": glHookTime(ev.comment.at), "updated_at": glHookTime(ev.comment.at),
			"project_id": sn.repoID, "noteable_id": sn.id, "system": false, "action": "create",
			"url": fmt.Sprintf("%s#note_%d", glWebURL(base, sn.repo, sn.number), ev.comment.id)},
		Repository: issue.Repository, Issue: issue.ObjectAttributes}
	p.Issue.Action = ""
	body, err := json.Marshal(p)
	if err != nil {
		s.log.Error("marshal gitlab note hook", zap.Error(err))
		return nil
	}
	return []outgoing{s.glOutgoing("Note Hook", "note", body, sn, hookID, h)}
}

// gitlabIssueHook builds an Issue Hook delivery of object kind kind
// ("issue", or "work_item" for tasks, epics and the other work item types)
// whose object_attributes.type is typ.
func (s *Sim) gitlabIssueHook(evs []storeEvent, hookID int64, h Hook, kind, typ string) []outgoing {
	p := s.gitlabIssueHookPayload(evs, kind, typ)
	body, err := json.Marshal(p)
	if err != nil {
		s.log.Error("marshal gitlab issue hook", zap.Error(err))
		return nil
	}
	return []outgoing{s.glOutgoing("Issue Hook", "event", body, evs[0].issue, hookID, h)}
}

// gitlabIssueHookPayload is the Issue Hook payload of one write.
func (s *Sim) gitlabIssueHookPayload(evs []storeEvent, kind, typ string) glIssueHook {
	sn := evs[0].issue
	base := s.base()
	action := "update"
	var added, removed []label
	changes := map[string]any{}
	for _, ev := range evs {
		switch ev.action {
		case "opened":
			action = "open"
		case "closed":
			action = "close"
		case "reopened":
			action = "reopen"
		case "labeled":
			added = append(added, ev.label)
		case "unlabeled":
			removed = append(removed, ev.label)
		case "edited":
			if from, ok := ev.changes["title"]; ok {
				changes["title"] = map[string]string{"previous": from, "current": sn.title}
			}
			if from, ok := ev.changes["body"]; ok {
				changes["description"] = map[string]string{"previous": from, "current": sn.body}
			}
		}
	}
	current := glHookLabels(sn.repoID, sn.labels)
	if action != "open" && (len(added) > 0 || len(removed) > 0) {
		var prev []label
		for _, l := range sn.labels {
			if !slices.ContainsFunc(added, func(a label) bool { return a.name == l.name }) {
				prev = append(prev, l)
			}
		}
		prev = append(prev, removed...)
		changes["labels"] = map[string]any{"previous": glHookLabels(sn.repoID, prev), "current": current}
	}
	if action != "open" {
		changes["updated_at"] = map[string]string{"previous": glHookTime(sn.updatedAt), "current": glHookTime(sn.updatedAt)}
	}
	sender := evs[0].sender
	ns := sn.repo
	if i := strings.LastIndexByte(ns, '/'); i >= 0 {
		ns = ns[:i]
	}
	webProject := base + "/gitlab/" + sn.repo
	p := glIssueHook{ObjectKind: kind, EventType: kind,
		User: glHookUser{ID: userID(sender), Name: sender, Username: sender,
			AvatarURL: "https://www.gravatar.com/avatar/0?s=80&d=identicon", Email: "[REDACTED]"},
		Project: glHookProject{ID: sn.repoID, Name: sn.repo[strings.LastIndexByte(sn.repo, '/')+1:], WebURL: webProject,
			GitSSHURL: "git@sim:" + sn.repo + ".git", GitHTTPURL: webProject + ".git", Namespace: ns,
			VisibilityLevel: 0, PathWithNamespace: sn.repo, DefaultBranch: "main", Homepage: webProject,
			URL: "git@sim:" + sn.repo + ".git", SSHURL: "git@sim:" + sn.repo + ".git", HTTPURL: webProject + ".git"},
		ObjectAttributes: glHookIssue{ID: sn.id, IID: sn.number, Title: sn.title, Description: sn.body,
			State: "opened", StateID: 1, Action: action, URL: glWebURL(base, sn.repo, sn.number),
			AuthorID: userID(sn.author), ProjectID: sn.repoID, CreatedAt: glHookTime(sn.createdAt),
			UpdatedAt: glHookTime(sn.updatedAt), UpdatedByID: userID(sender), AssigneeIDs: []int64{},
			Type: typ, Severity: "unknown", Labels: current},
		Labels:     current,
		Changes:    changes,
		Repository: map[string]any{"name": sn.repo, "url": "git@sim:" + sn.repo + ".git", "description": nil, "homepage": webProject},
		Assignees:  []glHookUser{},
	}
	if !sn.open {
		p.ObjectAttributes.State, p.ObjectAttributes.StateID = "closed", 2
		t := glHookTime(sn.closedAt)
		p.ObjectAttributes.ClosedAt = &t
	}
	return p
}

// glOutgoing is a delivery of event ("Issue Hook", "Note Hook") with the
// headers GitLab sends; kind tells apart the event UUIDs of one version's
// deliveries of different events.
func (s *Sim) glOutgoing(event, kind string, body []byte, sn snapshot, hookID int64, h Hook) outgoing {
	base := s.base()
	eventUUID := glUUID(fmt.Sprintf("%s|%s|%p|%d|%d|%d", kind, glSalt, s, sn.repoID, sn.id, sn.version))
	key := glUUID(fmt.Sprintf("delivery|%s|%d", eventUUID, hookID))
	hdr := http.Header{}
	hdr.Set("Content-Type", "application/json")
	hdr.Set("User-Agent", "GitLab/"+glVersion)
	hdr.Set("X-Gitlab-Event", event)
	hdr.Set("X-Gitlab-Event-UUID", eventUUID)
	hdr.Set("X-Gitlab-Webhook-UUID", glUUID(fmt.Sprintf("hook|%d", hookID)))
	hdr.Set("X-Gitlab-Instance", base+"/gitlab")
	hdr.Set("Idempotency-Key", key)
	if h.Secret != "" {
		hdr.Set("X-Gitlab-Token", h.Secret)
	}
	return outgoing{event: event, guid: key, body: body, header: hdr}
}

// glHookLabels is labels in the hook's label shape, sorted by title.
func glHookLabels(projectID int64, ls []label) []glHookLabel {
	out := make([]glHookLabel, 0, len(ls))
	for _, l := range ls {
		hl := glHookLabel{ID: l.id, Title: l.name, Color: "#" + l.color, ProjectID: projectID,
			CreatedAt: glHookTime(time.Unix(0, 0)), UpdatedAt: glHookTime(time.Unix(0, 0)), Type: "ProjectLabel"}
		if l.description != "" {
			d := l.description
			hl.Description = &d
		}
		out = append(out, hl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Title < out[j].Title })
	return out
}

// glSalt makes derived UUIDs differ between processes, so a restarted sim
// (whose ids start again from 1) never repeats an earlier delivery's id.
var glSalt = newGUID()

// glUUID derives a version-4-shaped UUID from seed, so every hook sees the
// same event UUID and a retry the same idempotency key.
func glUUID(seed string) string {
	b := sha256.Sum256([]byte(seed))
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// SendGitLabWorkItem makes GitLab's Issue Hook delivery for a work item of
// type typ ("Task", "Epic", "Incident", …) being created in repo with
// title and labels, and queues it to every GitLab hook of repo. GitLab
// sends such deliveries with object_kind work_item under the same
// X-Gitlab-Event: Issue Hook as issues
// (https://docs.gitlab.com/user/project/integrations/webhook_events/#work-item-events;
// gitlab-org/gitlab#535890), so a receiver subscribed to issue events gets
// them whether it wants them or not. The work item takes the next iid of
// the project, as tasks share the issues' sequence, but is not stored: the
// sim's issues API serves issues only. It returns that iid.
func (s *Sim) SendGitLabWorkItem(repo, typ, title string, labels ...string) int {
	sn := s.store.reserve(repo, title, labels)
	ev := storeEvent{action: "opened", sender: "sim", issue: sn}
	for _, q := range s.hooks.matching(repo) {
		if q.hook.Dialect != "gitlab" {
			continue
		}
		for _, out := range s.gitlabIssueHook([]storeEvent{ev}, q.id, q.hook, "work_item", typ) {
			drop, extra := s.faults.delivery()
			s.hooks.enqueue(q, out, drop, extra)
		}
	}
	return sn.number
}

// gitlabSystemEvent queues a system hook delivery of a project event
// (project_create, project_update) to every GitLab system hook, in the
// documented shape (https://docs.gitlab.com/administration/system_hooks/):
// X-Gitlab-Event "System Hook", the project's path_with_namespace and id
// at the top level. Archiving and unarchiving send project_update without
// an archived flag, as users report (uselagoon/lagoon#3022).
func (s *Sim) gitlabSystemEvent(event, repo string) {
	hooks := s.hooks.system()
	if len(hooks) == 0 {
		return
	}
	id, created, ok := s.store.repoInfo(repo)
	if !ok {
		return
	}
	ns, name := repo, repo
	if i := strings.LastIndex(repo, "/"); i >= 0 {
		ns, name = repo[:i], repo[i+1:]
	}
	body, err := json.Marshal(map[string]any{
		"created_at": created.UTC().Format(time.RFC3339), "updated_at": s.clock().UTC().Format(time.RFC3339),
		"event_name": event, "name": name, "path": name, "path_with_namespace": repo,
		"project_id": id, "project_namespace_id": glGroupID(ns), "owner_name": ns, "owner_email": "",
		"owners": []map[string]string{}, "project_visibility": "private",
	})
	if err != nil {
		s.log.Error("marshal gitlab system hook", zap.Error(err))
		return
	}
	eventUUID := glUUID(fmt.Sprintf("system|%s|%s|%p|%d", event, glSalt, s, s.clock().UnixNano()))
	for _, q := range hooks {
		if q.hook.Dialect != "gitlab" {
			continue
		}
		key := glUUID(fmt.Sprintf("delivery|%s|%d", eventUUID, q.id))
		hdr := http.Header{}
		hdr.Set("Content-Type", "application/json")
		hdr.Set("User-Agent", "GitLab/"+glVersion)
		hdr.Set("X-Gitlab-Event", "System Hook")
		hdr.Set("X-Gitlab-Event-UUID", eventUUID)
		hdr.Set("X-Gitlab-Instance", s.base()+"/gitlab")
		hdr.Set("Idempotency-Key", key)
		if q.hook.Secret != "" {
			hdr.Set("X-Gitlab-Token", q.hook.Secret)
		}
		drop, extra := s.faults.delivery()
		s.hooks.enqueue(q, outgoing{event: "System Hook", guid: key, body: body, header: hdr}, drop, extra)
	}
}
