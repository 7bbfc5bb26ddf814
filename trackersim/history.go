package trackersim

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Each dialect's ticket history, from the store's label changes: what the
// daemon reads to learn who added the trigger label when no webhook said.

// labelEdits splits a change into the labels it added and removed.
func (c labelChange) labelEdits() (added, removed []string) {
	for _, l := range c.after {
		if !slices.Contains(c.before, l) {
			added = append(added, l)
		}
	}
	for _, l := range c.before {
		if !slices.Contains(c.after, l) {
			removed = append(removed, l)
		}
	}
	return added, removed
}

const ghIssueEventsDoc = "https://docs.github.com/rest/issues/events#list-issue-events"

// ghIssueEvents is "List issue events", oldest first and paginated: one
// labeled or unlabeled event per label, with the actor and the label
// (labels given at creation appear as labeled events by the creator).
func (s *Sim) ghIssueEvents(w http.ResponseWriter, r *http.Request, c *ghCall) {
	n, ok := issueNumber(w, r, c)
	if !ok {
		return
	}
	hist, err := s.store.labelHistory(c.repo, n)
	if err != nil {
		writeGHError(w, http.StatusNotFound, "Not Found", c.doc)
		return
	}
	out := []map[string]any{}
	for _, ch := range hist {
		added, removed := ch.labelEdits()
		for i, set := range [][]string{added, removed} {
			event := []string{"labeled", "unlabeled"}[i]
			for _, l := range set {
				out = append(out, map[string]any{"id": ch.id*16 + int64(len(out)%16), "event": event,
					"actor": s.ghUser(c.base, ch.login), "label": map[string]string{"name": l, "color": "ededed"},
					"created_at": ch.at.UTC().Format("2006-01-02T15:04:05Z")})
			}
		}
	}
	lo, hi := s.paginate(w, r, c, len(out))
	writeJSON(w, http.StatusOK, out[lo:hi])
}

// glResourceLabelEvents is "List project issue label events"
// (https://docs.gitlab.com/api/resource_label_events/#list-project-issue-label-events):
// action add or remove per label, with the user. Not paginated here (the
// sim's histories are short); GitLab pages by 20.
func (s *Sim) glResourceLabelEvents(w http.ResponseWriter, r *http.Request, c *glCall) {
	n, ok := s.glIID(w, r)
	if !ok {
		return
	}
	hist, err := s.store.labelHistory(c.repo, n)
	if err != nil {
		s.glStoreError(w, err)
		return
	}
	out := []map[string]any{}
	for _, ch := range hist {
		added, removed := ch.labelEdits()
		for i, set := range [][]string{added, removed} {
			for _, l := range set {
				out = append(out, map[string]any{"id": ch.id*16 + int64(len(out)%16), "action": []string{"add", "remove"}[i],
					"user":       map[string]any{"id": userID(ch.login), "username": ch.login, "name": ch.login, "state": "active"},
					"created_at": glTime(ch.at), "resource_type": "Issue", "resource_id": n,
					"label": map[string]any{"id": userID("label|" + l), "name": l}})
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// adoWorkItemUpdates is "Updates - List"
// (https://learn.microsoft.com/rest/api/azure/devops/wit/updates/list):
// one update per revision that changed System.Tags, with revisedBy and the
// tags' oldValue and newValue ("; "-separated).
func (s *Sim) adoWorkItemUpdates(w http.ResponseWriter, r *http.Request, c *adoCall) {
	id, ok := adoWorkItemID(w, r)
	if !ok {
		return
	}
	hist, err := s.store.labelHistory(c.repo, id)
	if err != nil {
		s.adoStoreError(w, id, err)
		return
	}
	out := []map[string]any{}
	prevAuth, prevChanged := "", ""
	for _, ch := range hist {
		fields := map[string]any{}
		// revisedBy is the revision's System.ChangedBy, which a
		// bypass-rules update may have written; System.AuthorizedAs, who
		// authenticated, is listed when it changed, like every field
		// (ado.go, adoBypassRules). The sim lists only the revisions that
		// changed tags, so "changed" is relative to the previous one listed.
		changed := orStr(ch.changedBy, ch.login)
		if ch.login != prevAuth {
			fields["System.AuthorizedAs"] = adoIdentityChange(prevAuth, ch.login)
		}
		if changed != prevChanged {
			fields["System.ChangedBy"] = adoIdentityChange(prevChanged, changed)
		}
		prevAuth, prevChanged = ch.login, changed
		tags := map[string]any{}
		if len(ch.before) > 0 {
			tags["oldValue"] = strings.Join(ch.before, "; ")
		}
		if len(ch.after) > 0 {
			tags["newValue"] = strings.Join(ch.after, "; ")
		}
		fields["System.Tags"] = tags
		out = append(out, map[string]any{"id": ch.rev, "workItemId": id, "rev": ch.rev,
			"revisedBy": adoIdentityOf(changed), "revisedDate": adoTime(ch.at),
			"fields": fields})
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(out), "value": out})
}

// jiraEmbeddedHistories is how many histories Get issue embeds with
// expand=changelog: the latest 100, with total the full count and no way
// to page them (pycontribs/jira#911: "issue?expand=changelog supplies the
// most recent 100 histories and there is no pagination supported";
// Atlassian, JRACLOUD-67458). Cloud serves the rest through Get changelogs
// (jiraGetChangelogs); Data Center's REST reference has no such resource
// (pycontribs/jira#911, on the Server 8.7.1 reference), so the sim embeds
// the same way on both and a client cannot page there.
const jiraEmbeddedHistories = 100

// jiraHistoriesOf is an issue's changelog histories, oldest first, a
// "labels" item with the space-separated sets. Labels given at creation
// are no history entry, as in Jira: the creator set them.
func (s *Sim) jiraHistoriesOf(base, repo string, n int) []map[string]any {
	hist, _ := s.store.labelHistory(repo, n)
	out := []map[string]any{}
	for _, ch := range hist {
		if ch.before == nil && ch.rev == 1 {
			continue // the creation
		}
		from, to := strings.Join(ch.before, " "), strings.Join(ch.after, " ")
		out = append(out, map[string]any{"id": strconv.FormatInt(ch.id, 10), "author": s.jiraActor(base, ch.login),
			"created": ch.at.UTC().Format("2006-01-02T15:04:05.000-0700"),
			"items":   []map[string]any{{"field": "labels", "fieldtype": "jira", "fromString": from, "toString": to}}})
	}
	return out
}

// jiraChangelogOf is an issue's changelog as expand=changelog gives it
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/#api-rest-api-3-issue-issueidorkey-get):
// the latest jiraEmbeddedHistories histories, oldest first, total the
// full count.
func (s *Sim) jiraChangelogOf(base, repo string, n int) map[string]any {
	all := s.jiraHistoriesOf(base, repo, n)
	latest := all[max(0, len(all)-jiraEmbeddedHistories):]
	return map[string]any{"startAt": 0, "maxResults": len(latest), "total": len(all), "histories": latest}
}

// jiraGetChangelogs: GET /rest/api/{2|3}/issue/{issueIdOrKey}/changelog
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/#api-rest-api-3-issue-issueidorkey-changelog-get):
// "a paginated list of all changelogs for an issue sorted by date,
// starting from the oldest", a PageBeanChangelog (startAt, maxResults at
// most 100 and 100 by default, total, isLast, values). Cloud only: Data
// Center answers 404 as for any resource it lacks (pycontribs/jira#911).
func (s *Sim) jiraGetChangelogs(w http.ResponseWriter, r *http.Request, c *jiraCall) {
	if s.jiraDataCenter() {
		jiraError(w, http.StatusNotFound, "null for uri: "+r.URL.String())
		return
	}
	repo, n, ok := jiraIssueRef(w, r)
	if !ok {
		return
	}
	if _, err := s.store.labelHistory(repo, n); err != nil {
		s.jiraStoreError(w, err)
		return
	}
	q := r.URL.Query()
	startAt, maxResults := 0, jiraEmbeddedHistories
	if v := q.Get("startAt"); v != "" {
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 {
			jiraError(w, http.StatusBadRequest, "The value '"+v+"' is invalid for startAt.")
			return
		}
		startAt = i
	}
	if v := q.Get("maxResults"); v != "" {
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 {
			jiraError(w, http.StatusBadRequest, "The value '"+v+"' is invalid for maxResults.")
			return
		}
		maxResults = min(i, jiraEmbeddedHistories)
	}
	all := s.jiraHistoriesOf(c.base, repo, n)
	from := min(startAt, len(all))
	to := min(from+maxResults, len(all))
	writeJSON(w, http.StatusOK, map[string]any{"self": c.base + r.URL.RequestURI(), "startAt": startAt,
		"maxResults": maxResults, "total": len(all), "isLast": to >= len(all), "values": all[from:to]})
}
