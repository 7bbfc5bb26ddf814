package azuredevops

import (
	"errors"
	"strings"
	"testing"

	"github.com/microsoft/azure-devops-go-api/azuredevops/v7"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// The fix of a TF401320 refusal names the fields its rule errors list, and
// only names that cannot render as markup or mention anyone; without
// usable rule errors it falls back to the message's field. Other refusals
// keep the status's general fix.
func TestExplainRefusal(t *testing.T) {
	wrapped := func(msg string, props map[string]any) error {
		we := azuredevops.WrappedError{Message: &msg}
		if props != nil {
			we.CustomProperties = &props
		}
		return platforms.Rejected(400, &we)
	}
	rules := func(names ...string) map[string]any {
		var list []any
		for _, n := range names {
			list = append(list, map[string]any{"fieldReferenceName": n})
		}
		return map[string]any{"RuleValidationErrors": list}
	}
	const msg = "TF401320: Rule Error for field Injected. Error code: Required, InvalidEmpty."
	for _, c := range []struct {
		err  error
		want string
	}{
		{wrapped(msg, rules("ABLScrum.Injected", "ABLScrum.SecurityIssue")), "fields `ABLScrum.Injected`, `ABLScrum.SecurityIssue`"},
		{wrapped(msg, rules("`@everyone <b>`")), "field `Injected`"},
		{wrapped(msg, nil), "field `Injected`"},
		{wrapped("TF401320: Rule Error for field <img src=x>. Error code: Required.", nil), "on another field"},
	} {
		got := platforms.FixOf(explainRefusal(c.err, "agent-smith:enqueued"))
		if !strings.Contains(got, c.want) || strings.Contains(got, "@") || strings.Contains(got, "<") {
			t.Errorf("fix %q, want it to name %s and nothing else", got, c.want)
		}
		if !errors.Is(explainRefusal(c.err, ""), platforms.ErrRejected) || platforms.RejectedStatus(explainRefusal(c.err, "")) != 400 {
			t.Errorf("the fix hides the refusal or its status")
		}
	}
	msg403 := "TF401289: The current user does not have permissions to create tags."
	if got := platforms.FixOf(explainRefusal(wrapped(msg403, nil), "agent-smith:enqueued")); !strings.Contains(got, `"agent-smith:enqueued"`) || !strings.Contains(got, TagsFix) {
		t.Errorf("TF401289 fix %q", got)
	}
	if got := platforms.FixOf(explainRefusal(wrapped("VS403351: Test Operation for path /rev failed", nil), "x")); got != "" {
		t.Errorf("another refusal got the fix %q", got)
	}
}
