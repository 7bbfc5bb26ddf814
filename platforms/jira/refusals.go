package jira

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	jirasdk "github.com/andygrunwald/go-jira"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// Jira's REST edit sets only the fields the editmeta lists: a
// field on the Edit screen of the project and issue type, while
// the status does not carry the workflow property
// jira.issue.editable=false. Any other edit of labels is refused with 400
// {"errors":{"labels":"Field 'labels' cannot be set. It is not on the
// appropriate screen, or unknown."}} (pycontribs/jira#889, go-jira/jira#271,
// JRASERVER-27929, go-jira/jira#498 for a closed status), which says
// neither which of the two it is nor that people may still change labels
// in the UI. Sending it again gets it again, so the refusal carries its
// own fix (platforms.WithFix) for the ticket's refusal comment.

// notOnScreenMsg is the part of Jira's field error that says the field is
// not editable here (the rest, "or unknown.", varies by version).
const notOnScreenMsg = "cannot be set. It is not on the appropriate screen"

// Fixes of a label edit refused as not on the screen: EditScreenFix when
// Jira does not say which cause it is (also `agentsmithd check`'s), the
// other two when the editmeta tells them apart.
const (
	EditScreenFix = "put the Labels field on the Edit screen of this issue type (Project settings → Screens), " +
		"or, if the issue is in a status whose workflow property jira.issue.editable is false, remove that property or move the issue"
	screenLacksLabelsFix = "the Edit screen of this issue's type lacks the Labels field: put Labels on it " +
		"(Project settings → Screens, the screen the issue type's screen scheme uses for Edit Issue)"
	statusNotEditableFix = "this issue's status forbids every edit (its workflow property jira.issue.editable is false): " +
		"remove that property from the status in the project's workflow, or move the issue to an editable status"
)

// labelsNotOnScreen reports whether err is Jira's 400 refusal of a labels
// edit as not on the appropriate screen.
func labelsNotOnScreen(err error) bool {
	var je *jirasdk.Error
	if platforms.RejectedStatus(err) != http.StatusBadRequest || !errors.As(err, &je) || je == nil {
		return false
	}
	return strings.Contains(je.Errors["labels"], notOnScreenMsg)
}

// explainRefusal attaches the fix to a label edit of issue key refused as
// not on the screen, told apart with one GET of the editmeta (no
// field listed: the status is not editable; fields without labels: the
// screen lacks Labels). Other errors are returned as they are.
// Docs: GET /rest/api/{2|3}/issue/{issueIdOrKey}/editmeta
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/#api-rest-api-3-issue-issueidorkey-editmeta-get).
func (t *Tracker) explainRefusal(ctx context.Context, key string, err error) error {
	if !labelsNotOnScreen(err) {
		return err
	}
	var meta struct {
		Fields map[string]json.RawMessage `json:"fields"`
	}
	if _, gerr := t.get(ctx, t.api+"issue/"+url.PathEscape(key)+"/editmeta", &meta); gerr != nil || meta.Fields == nil {
		return platforms.WithFix(err, EditScreenFix+".")
	}
	if _, ok := meta.Fields["labels"]; ok {
		// Labels editable again since the refusal: the cause is gone or
		// unknown; say both.
		return platforms.WithFix(err, EditScreenFix+".")
	}
	if len(meta.Fields) == 0 {
		return platforms.WithFix(err, statusNotEditableFix+".")
	}
	return platforms.WithFix(err, screenLacksLabelsFix+".")
}
