package trackersim

import (
	"fmt"
	"net/http"
	"sync"
)

// Jira's Edit screen and non-editable statuses, and the editmeta endpoint
// that reports both.
//
// The REST edit (PUT /rest/api/{2|3}/issue/{key}) sets only fields its
// editmeta lists, and a field is listed when it is on the Edit screen of
// the issue's project and issue type and "the current workflow step is
// editable", which the status property jira.issue.editable=false turns off
// (the editmeta reference,
// https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/#api-rest-api-3-issue-issueidorkey-editmeta-get).
// A field that is not listed is refused with 400 and the field's error
// "Field 'labels' cannot be set. It is not on the appropriate screen, or
// unknown." (pycontribs/jira#889; go-jira/jira#271 and JRASERVER-27929;
// go-jira/jira#498 shows a closed issue refusing every field, labels and
// summary alike, with that message). People still edit labels in the UI,
// whose inline edit does not go through the Edit screen (the maintainer's
// answer in pycontribs/jira#889): the sim's Go API, a person's edits, is
// not refused.
//
// Comments are not edits: jira.issue.editable does not govern them; a
// status stops them with its own property, jira.permission.comment.denied
// (https://confluence.atlassian.com/servicedeskcloud/useful-workflow-properties-for-jira-cloud-1097176552.html,
// https://support.atlassian.com/jira-cloud-administration/docs/use-workflow-properties/),
// which the sim does not model: comments go through in every status.
//
// By default Labels is on every Edit screen and every status is editable,
// as in a new Jira project (its default screen carries Labels).

// jiraIssueType is the one issue type of the sim's issues.
const jiraIssueType = "Task"

// jiraScreens is what the Edit screens and statuses of the site allow.
type jiraScreens struct {
	mu sync.Mutex
	// labelsOff: project and issue type whose Edit screen lacks Labels.
	labelsOff map[[2]string]bool
	// frozen: project and status name with jira.issue.editable=false.
	frozen map[[2]string]bool
}

// SetJiraLabelsOnEditScreen puts the Labels field on (true, the default)
// or takes it off (false) the Edit screen of issueType ("Task", the sim's
// one type) in Jira project: off, every REST edit of labels of such an
// issue answers 400 "Field 'labels' cannot be set. It is not on the
// appropriate screen, or unknown." and editmeta leaves labels out.
func (s *Sim) SetJiraLabelsOnEditScreen(project, issueType string, on bool) {
	s.screens.mu.Lock()
	defer s.screens.mu.Unlock()
	if s.screens.labelsOff == nil {
		s.screens.labelsOff = map[[2]string]bool{}
	}
	k := [2]string{project, issueType}
	if on {
		delete(s.screens.labelsOff, k)
	} else {
		s.screens.labelsOff[k] = true
	}
}

// SetJiraStatusEditable sets the workflow property jira.issue.editable of
// status ("To Do" or "Done", the sim's two) in Jira project: false makes
// every REST edit of an issue in that status answer 400 with the field's
// "cannot be set" error and editmeta list no field; comments still go
// through. The default is true.
func (s *Sim) SetJiraStatusEditable(project, status string, editable bool) {
	s.screens.mu.Lock()
	defer s.screens.mu.Unlock()
	if s.screens.frozen == nil {
		s.screens.frozen = map[[2]string]bool{}
	}
	k := [2]string{project, status}
	if editable {
		delete(s.screens.frozen, k)
	} else {
		s.screens.frozen[k] = true
	}
}

// jiraEditable reports which fields of sn the REST edit may set: every
// field of the sim's Edit screen when its status is editable, less labels
// when its screen lacks them.
func (s *Sim) jiraEditable(sn snapshot) map[string]bool {
	s.screens.mu.Lock()
	defer s.screens.mu.Unlock()
	if s.screens.frozen[[2]string{sn.repo, jiraStatusOf(sn.open).Name}] {
		return map[string]bool{}
	}
	out := map[string]bool{"summary": true, "description": true, "labels": true, "components": true}
	if s.screens.labelsOff[[2]string{sn.repo, jiraIssueType}] {
		delete(out, "labels")
	}
	return out
}

// jiraNotOnScreen is Jira's error for a field the edit may not set.
func jiraNotOnScreen(field string) string {
	return fmt.Sprintf("Field '%s' cannot be set. It is not on the appropriate screen, or unknown.", field)
}

// jiraEditMeta: GET /rest/api/{2|3}/issue/{issueIdOrKey}/editmeta, the
// fields the REST edit accepts for this issue, each with its schema and
// operations (the reference above). Only labels is described in full;
// the other fields carry what clients read (key, name, operations).
func (s *Sim) jiraEditMeta(w http.ResponseWriter, r *http.Request, c *jiraCall) {
	repo, n, ok := jiraIssueRef(w, r)
	if !ok {
		return
	}
	sn, err := s.store.get(repo, n)
	if err != nil {
		s.jiraStoreError(w, err)
		return
	}
	meta := map[string]map[string]any{
		"summary": {"required": true, "schema": map[string]any{"type": "string", "system": "summary"},
			"name": "Summary", "key": "summary", "operations": []string{"set"}},
		"description": {"required": false, "schema": map[string]any{"type": "string", "system": "description"},
			"name": "Description", "key": "description", "operations": []string{"set"}},
		"labels": {"required": false, "schema": map[string]any{"type": "array", "items": "string", "system": "labels"},
			"name": "Labels", "key": "labels", "operations": []string{"add", "set", "remove"},
			"autoCompleteUrl": c.base + "/jira/rest/api/1.0/labels/suggest?query="},
		"components": {"required": false, "schema": map[string]any{"type": "array", "items": "component", "system": "components"},
			"name": "Components", "key": "components", "operations": []string{"add", "set", "remove"}},
	}
	fields := map[string]any{}
	for f := range s.jiraEditable(sn) {
		fields[f] = meta[f]
	}
	writeJSON(w, http.StatusOK, map[string]any{"fields": fields})
}
