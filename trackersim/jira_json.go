package trackersim

import (
	"strconv"
	"strings"
	"time"
)

// JSON shapes of the Jira dialect, after Jira's REST reference
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/#api-rest-api-3-issue-issueidorkey-get,
// https://docs.atlassian.com/software/jira/docs/api/REST/9.12.0/#api/2/issue-getIssue)
// and its webhook callbacks
// (https://developer.atlassian.com/cloud/jira/platform/webhooks/#example-callback-for-an-issue-related-event).
// REST v2 and webhooks carry rich text as a string; REST v3 carries it as an
// Atlassian Document Format (ADF) tree.

// jiraTimeLayout is Jira's timestamp format ("2024-05-01T10:20:30.000+0000").
const jiraTimeLayout = "2006-01-02T15:04:05.000-0700"

func jiraTime(t time.Time) string { return t.UTC().Format(jiraTimeLayout) }

// jiraErrors is Jira's error body: messages about the request as a whole and
// messages per field.
type jiraErrors struct {
	ErrorMessages []string          `json:"errorMessages"`
	Errors        map[string]string `json:"errors"`
}

type jiraUser struct {
	Self        string `json:"self"`
	AccountID   string `json:"accountId,omitempty"`
	Name        string `json:"name,omitempty"` // Data Center's user name
	DisplayName string `json:"displayName"`
	Active      bool   `json:"active"`
}

// jiraActor is the user a webhook names as who made the change: Cloud
// names users by accountId only (the user name was removed for privacy,
// https://developer.atlassian.com/cloud/jira/platform/deprecation-notice-user-privacy-api-migration-guide/),
// Data Center by name and key, with no accountId.
func (s *Sim) jiraActor(base, login string) jiraUser {
	u := jiraUserOf(base, login)
	if s.jiraDataCenter() {
		u.AccountID = ""
	} else {
		u.Name = ""
	}
	return u
}

func jiraUserOf(base, login string) jiraUser {
	id := strconv.FormatInt(userID(login), 10)
	return jiraUser{Self: base + "/jira/rest/api/2/user?accountId=" + id, AccountID: id, Name: login,
		DisplayName: login, Active: true}
}

type jiraStatusCategory struct {
	ID        int    `json:"id"`
	Key       string `json:"key"`
	ColorName string `json:"colorName"`
	Name      string `json:"name"`
}

type jiraStatus struct {
	ID             string             `json:"id"`
	Name           string             `json:"name"`
	StatusCategory jiraStatusCategory `json:"statusCategory"`
}

// jiraStatusOf maps the store's open flag onto Jira's default workflow: an
// open issue is "To Do" (category new), a closed one "Done" (category done).
func jiraStatusOf(open bool) jiraStatus {
	if open {
		return jiraStatus{ID: "10000", Name: "To Do",
			StatusCategory: jiraStatusCategory{ID: 2, Key: "new", ColorName: "blue-gray", Name: "To Do"}}
	}
	return jiraStatus{ID: "10001", Name: "Done",
		StatusCategory: jiraStatusCategory{ID: 3, Key: "done", ColorName: "green", Name: "Done"}}
}

type jiraProject struct {
	Self string `json:"self"`
	ID   string `json:"id"`
	Key  string `json:"key"`
	Name string `json:"name"`
}

// jiraIssue is an issue; Fields is a map so a request's "fields" parameter
// can select from it as Jira does.
type jiraIssue struct {
	Expand string         `json:"expand,omitempty"`
	ID     string         `json:"id"`
	Self   string         `json:"self"`
	Key    string         `json:"key"`
	Fields map[string]any `json:"fields"`
}

func jiraKey(sn snapshot) string { return sn.repo + "-" + strconv.Itoa(sn.number) }

// jiraIssueOf renders sn for REST version v ("2" or "3"; webhooks use "2")
// with the fields want selects (nil: all).
func jiraIssueOf(base, v string, sn snapshot, want map[string]bool) jiraIssue {
	var desc any
	if sn.body != "" {
		desc = sn.body
		if v == "3" {
			desc = jiraTextToADF(sn.body)
		}
	}
	all := map[string]any{
		"summary":     sn.title,
		"description": desc,
		"labels":      sn.labelNames(),
		"components":  jiraComponents(sn.components),
		"status":      jiraStatusOf(sn.open),
		"project": jiraProject{Self: base + "/jira/rest/api/" + v + "/project/" + strconv.FormatInt(sn.repoID, 10),
			ID: strconv.FormatInt(sn.repoID, 10), Key: sn.repo, Name: sn.repo},
		"issuetype": map[string]any{"id": "10002", "name": "Task", "subtask": false},
		"reporter":  jiraUserOf(base, sn.author),
		"creator":   jiraUserOf(base, sn.author),
		"created":   jiraTime(sn.createdAt),
		"updated":   jiraTime(sn.updatedAt),
	}
	fields := all
	if want != nil {
		fields = map[string]any{}
		for k, val := range all {
			if want[k] {
				fields[k] = val
			}
		}
	}
	id := strconv.FormatInt(sn.id, 10)
	return jiraIssue{Expand: "renderedFields,names,schema,operations,editmeta,changelog,versionedRepresentations",
		ID: id, Self: base + "/jira/rest/api/" + v + "/issue/" + id, Key: jiraKey(sn), Fields: fields}
}

// jiraFieldSet parses a "fields" parameter: comma-separated field ids;
// absent, "*all" or "*navigable" select everything.
func jiraFieldSet(param string) map[string]bool {
	if param == "" {
		return nil
	}
	out := map[string]bool{}
	for _, f := range strings.Split(param, ",") {
		f = strings.TrimSpace(f)
		if f == "*all" || f == "*navigable" {
			return nil
		}
		out[f] = true
	}
	return out
}

type jiraComment struct {
	Self    string   `json:"self"`
	ID      string   `json:"id"`
	Author  jiraUser `json:"author"`
	Body    any      `json:"body"`
	Created string   `json:"created"`
	Updated string   `json:"updated"`
}

// adfNode is one node of an ADF document
// (https://developer.atlassian.com/cloud/jira/platform/apis/document/structure/).
type adfNode struct {
	Type    string         `json:"type"`
	Version int            `json:"version,omitempty"`
	Attrs   map[string]any `json:"attrs,omitempty"`
	Content []adfNode      `json:"content,omitempty"`
	Text    string         `json:"text,omitempty"`
}

// jiraTextToADF is how the sim renders stored text for REST v3: a paragraph
// per blank-line-separated block, hard breaks for single newlines.
func jiraTextToADF(text string) adfNode {
	doc := adfNode{Type: "doc", Version: 1}
	for _, block := range strings.Split(text, "\n\n") {
		if block == "" {
			continue
		}
		p := adfNode{Type: "paragraph"}
		for i, line := range strings.Split(block, "\n") {
			if i > 0 {
				p.Content = append(p.Content, adfNode{Type: "hardBreak"})
			}
			if line != "" {
				p.Content = append(p.Content, adfNode{Type: "text", Text: line})
			}
		}
		doc.Content = append(doc.Content, p)
	}
	return doc
}

// jiraADFText is how the sim stores an incoming ADF body: top-level blocks
// separated by a blank line, code blocks fenced with ```, hard breaks as
// newlines, other nodes by their text. ok is false for a tree that is not
// a "doc" of version 1 or holds an empty text node, which Jira refuses.
func jiraADFText(doc adfNode) (string, bool) {
	if doc.Type != "doc" || doc.Version != 1 {
		return "", false
	}
	var parts []string
	valid := true
	var text func(n adfNode) string
	text = func(n adfNode) string {
		switch n.Type {
		case "text":
			if n.Text == "" {
				valid = false
			}
			return n.Text
		case "hardBreak":
			return "\n"
		}
		var b strings.Builder
		for _, c := range n.Content {
			b.WriteString(text(c))
		}
		return b.String()
	}
	for _, n := range doc.Content {
		switch n.Type {
		case "codeBlock":
			lang, _ := n.Attrs["language"].(string)
			parts = append(parts, "```"+lang+"\n"+text(n)+"\n```")
		default:
			parts = append(parts, text(n))
		}
	}
	return strings.Join(parts, "\n\n"), valid
}

// jiraWebhookEvent is an issue event callback.
type jiraWebhookEvent struct {
	Timestamp          int64          `json:"timestamp"`
	WebhookEvent       string         `json:"webhookEvent"`
	IssueEventTypeName string         `json:"issue_event_type_name"`
	User               jiraUser       `json:"user"`
	Issue              jiraIssue      `json:"issue"`
	Changelog          *jiraChangelog `json:"changelog,omitempty"`
	MatchedWebhookIDs  []int64        `json:"matchedWebhookIds"`
}

type jiraChangelog struct {
	ID    string              `json:"id"`
	Items []jiraChangelogItem `json:"items"`
}

// jiraChangelogItem is one field change; labels are reported as the
// space-separated label sets before and after.
type jiraChangelogItem struct {
	Field      string  `json:"field"`
	FieldType  string  `json:"fieldtype"`
	FieldID    string  `json:"fieldId"`
	From       *string `json:"from"`
	FromString *string `json:"fromString"`
	To         *string `json:"to"`
	ToString   *string `json:"toString"`
}

// jiraComponents renders an issue's components as Jira's fields.components
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/#api-rest-api-3-issue-issueidorkey-get):
// objects with the component's name, never null.
func jiraComponents(names []string) []map[string]string {
	out := make([]map[string]string, 0, len(names))
	for _, n := range names {
		out = append(out, map[string]string{"name": n})
	}
	return out
}
