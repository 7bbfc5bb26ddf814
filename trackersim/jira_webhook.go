package trackersim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

// Jira webhooks: one callback per change of an issue, in the shape of
// https://developer.atlassian.com/cloud/jira/platform/webhooks/#example-callback-for-an-issue-related-event:
// jira:issue_created for a new issue (its labels in issue.fields), else
// jira:issue_updated with a changelog item per changed field (labels as
// space-separated sets before and after, "status" for closing and
// reopening). The issue is rendered as REST v2 does (plain-text
// description). Headers: X-Atlassian-Webhook-Identifier, the same on every
// retry of one callback, and, for a hook with a secret, X-Hub-Signature
// "sha256=<hex HMAC-SHA256 of the body>"
// (https://developer.atlassian.com/cloud/jira/platform/webhooks/#secure-admin-webhooks).
// A new comment is its own comment_created callback (jiraComment).

func (s *Sim) jiraDeliveries(evs []storeEvent, hookID int64, h Hook) []outgoing {
	if len(evs) > 0 && !s.jiraHookWants(h, evs[0].issue) {
		return nil
	}
	evs, c := splitComment(evs)
	var out []outgoing
	if c != nil {
		out = s.jiraComment(*c, hookID, h)
	}
	if len(evs) == 0 {
		return out
	}
	sn := evs[0].issue
	base := s.base()
	p := jiraWebhookEvent{
		Timestamp:         s.clock().UnixMilli(),
		User:              s.jiraActor(base, evs[0].sender),
		Issue:             jiraIssueOf(base, "2", sn, nil),
		MatchedWebhookIDs: []int64{hookID},
	}
	p.Issue.Expand = ""
	if evs[0].action == "opened" {
		p.WebhookEvent, p.IssueEventTypeName = "jira:issue_created", "issue_created"
	} else {
		p.WebhookEvent, p.IssueEventTypeName = "jira:issue_updated", "issue_updated"
		p.Changelog = &jiraChangelog{ID: strconv.FormatInt(sn.version, 10), Items: jiraChangelogItems(evs, sn)}
		for _, ev := range evs {
			if ev.action == "closed" || ev.action == "reopened" {
				p.IssueEventTypeName = "issue_generic" // a workflow transition
			}
		}
	}
	body, err := json.Marshal(p)
	if err != nil {
		s.log.Error("marshal jira webhook", zap.Error(err))
		return nil
	}
	return append(out, jiraOutgoing(p.WebhookEvent, body, h))
}

// jiraOutgoing is a callback with the headers Jira sends.
func jiraOutgoing(event string, body []byte, h Hook) outgoing {
	guid := newGUID()
	hdr := http.Header{}
	hdr.Set("Content-Type", "application/json; charset=UTF-8")
	hdr.Set("User-Agent", "Atlassian Webhook HTTP Client")
	hdr.Set("X-Atlassian-Webhook-Identifier", guid)
	if h.Secret != "" {
		m := hmac.New(sha256.New, []byte(h.Secret))
		m.Write(body)
		hdr.Set("X-Hub-Signature", "sha256="+hex.EncodeToString(m.Sum(nil)))
	}
	return outgoing{event: event, guid: guid, body: body, header: hdr}
}

// jiraComment is the comment_created callback of a new comment: the comment
// (REST v2 shape, body as wiki-markup text) and the issue it is on
// (https://developer.atlassian.com/cloud/jira/platform/webhooks/; a captured
// delivery: https://gist.github.com/patrickng/428ab1ed68fe909261c2b3bf853da7c4).
func (s *Sim) jiraComment(ev storeEvent, hookID int64, h Hook) []outgoing {
	base := s.base()
	issue := jiraIssueOf(base, "2", ev.issue, nil)
	issue.Expand = ""
	author := s.jiraActor(base, ev.comment.author)
	at := ev.comment.at.UTC().Format("2006-01-02T15:04:05.000-0700")
	p := map[string]any{
		"timestamp":    s.clock().UnixMilli(),
		"webhookEvent": "comment_created",
		"comment": map[string]any{
			"self":   fmt.Sprintf("%s/comment/%d", issue.Self, ev.comment.id),
			"id":     strconv.FormatInt(ev.comment.id, 10),
			"author": author, "updateAuthor": author, "body": ev.comment.body,
			"created": at, "updated": at, "jsdPublic": true,
		},
		"issue":             issue,
		"matchedWebhookIds": []int64{hookID},
	}
	body, err := json.Marshal(p)
	if err != nil {
		s.log.Error("marshal jira comment webhook", zap.Error(err))
		return nil
	}
	return []outgoing{jiraOutgoing("comment_created", body, h)}
}

// jiraChangelogItems describes one mutation's events as Jira's changelog.
func jiraChangelogItems(evs []storeEvent, sn snapshot) []jiraChangelogItem {
	str := func(s string) *string { return &s }
	var items []jiraChangelogItem
	var added, removed []string
	for _, ev := range evs {
		switch ev.action {
		case "edited":
			if from, ok := ev.changes["title"]; ok {
				items = append(items, jiraChangelogItem{Field: "summary", FieldType: "jira", FieldID: "summary",
					FromString: str(from), ToString: str(sn.title)})
			}
			if from, ok := ev.changes["body"]; ok {
				items = append(items, jiraChangelogItem{Field: "description", FieldType: "jira", FieldID: "description",
					FromString: str(from), ToString: str(sn.body)})
			}
			if from, ok := ev.changes["components"]; ok {
				items = append(items, jiraChangelogItem{Field: "Component", FieldType: "jira", FieldID: "components",
					FromString: str(from), ToString: str(strings.Join(sn.components, ","))})
			}
		case "closed", "reopened":
			from, to := jiraStatusOf(!sn.open), jiraStatusOf(sn.open)
			items = append(items, jiraChangelogItem{Field: "status", FieldType: "jira", FieldID: "status",
				From: str(from.ID), FromString: str(from.Name), To: str(to.ID), ToString: str(to.Name)})
		case "labeled":
			added = append(added, ev.label.name)
		case "unlabeled":
			removed = append(removed, ev.label.name)
		}
	}
	if len(added)+len(removed) > 0 {
		after := sn.labelNames()
		before := slices.DeleteFunc(slices.Clone(after), func(l string) bool { return slices.Contains(added, l) })
		before = append(before, removed...)
		items = append(items, jiraChangelogItem{Field: "labels", FieldType: "jira", FieldID: "labels",
			FromString: str(strings.Join(before, " ")), ToString: str(strings.Join(after, " "))})
	}
	return items
}

// jiraProjectEvent queues a project event (project_created,
// project_archived, project_restored_archived) of the Jira project key to
// every Jira admin webhook, those of every project (Hook.Repo ""): Jira
// sends project events without a JQL filter
// (https://developer.atlassian.com/cloud/jira/platform/webhooks/).
func (s *Sim) jiraProjectEvent(event, key string) {
	id, _, ok := s.store.repoInfo(key)
	if !ok {
		return
	}
	body, err := json.Marshal(map[string]any{"timestamp": s.clock().UnixMilli(), "webhookEvent": event,
		"project": map[string]any{"self": s.base() + "/jira/rest/api/2/project/" + strconv.FormatInt(id, 10),
			"id": id, "key": key, "name": key, "projectTypeKey": "software"}})
	if err != nil {
		s.log.Error("marshal jira project event", zap.Error(err))
		return
	}
	for _, q := range s.hooks.matching("") {
		if q.hook.Dialect == "jira" && q.hook.Repo == "" {
			drop, extra := s.faults.delivery()
			s.hooks.enqueue(q, jiraOutgoing(event, body, q.hook), drop, extra)
		}
	}
}

// jiraHookWants applies an admin webhook's JQL filter (Hook.JQL) to the
// issue as the change left it: "the JQL filter that specifies which issues
// the webhook is sent for"
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-webhooks/#api-rest-api-3-webhook-post).
// A filter the sim cannot parse sends nothing and is logged, as a hook
// Jira refused to save would.
func (s *Sim) jiraHookWants(h Hook, sn snapshot) bool {
	if h.JQL == "" {
		return true
	}
	q, err := parseJQL(h.JQL)
	if err != nil {
		s.log.Warn("jira webhook JQL filter not understood: nothing sent", zap.String("jql", h.JQL), zap.Error(err))
		return false
	}
	return q.matches(sn)
}
