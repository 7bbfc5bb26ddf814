package trackersim

import (
	"errors"
	"fmt"
)

// errLabelsRefused is a label write the tracker refuses for good
// (RefuseLabelWrites); each dialect answers it as its tracker does.
var errLabelsRefused = errors.New("sim: label write refused")

// Answers of a refused label write, as the trackers word them.
const (
	// GitHub's 403 to a token without issues write, "Resource not
	// accessible by integration" (the message an App installation token
	// gets; https://docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api).
	ghRefusedMessage = "Resource not accessible by integration"
	// GitLab's 403 to a member below Reporter editing an issue's labels
	// (https://docs.gitlab.com/api/rest/troubleshooting/#status-codes).
	glRefusedMessage = "403 Forbidden"
	// Jira's 400 to an edit of a field that is not on the issue type's
	// edit screen (https://jira.atlassian.com/browse/JRACLOUD-36009,
	// https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/#api-rest-api-3-issue-issueidorkey-put).
	jiraRefusedLabels = "Field 'labels' cannot be set. It is not on the appropriate screen, or unknown."
	// Azure DevOps' 400 when a work item rule refuses the update
	// (TF401320, RuleValidationException).
	adoRefusedMessage = "TF401320: Rule Error for field Tags. Error code: ReadOnly."
)

// RefuseLabelWrites makes every label write the daemon's API clients make
// on issue number of repo a refusal for good, answered as each tracker
// answers one (GitHub 403, GitLab 403, Jira 400 "Field 'labels' cannot be
// set", Azure DevOps 400 TF401320); refuse false ends it. Changes made
// through the Go API (a person's) and comments still go through.
func (s *Sim) RefuseLabelWrites(repo string, number int, refuse bool) {
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	if s.store.refused == nil {
		s.store.refused = map[string]bool{}
	}
	key := fmt.Sprintf("%s#%d", repo, number)
	if refuse {
		s.store.refused[key] = true
	} else {
		delete(s.store.refused, key)
	}
}

// refusedLabels reports whether u is a label write by an API client on an
// issue RefuseLabelWrites refused. The caller holds st.mu.
func (st *store) refusedLabels(repo string, number int, by actor, u update) bool {
	if by.writer == humanActor.writer || (u.Labels == nil && len(u.Add) == 0 && len(u.Remove) == 0) {
		return false
	}
	return st.refused[fmt.Sprintf("%s#%d", repo, number)]
}
