package trackersim

import (
	"net/http"
	"slices"
	"testing"
)

// An identity that may not create tags adds a tag the project defines, in
// another case too, and is refused 403 TF401289 with the service's body
// for one it does not; nothing of the refused document is applied. The
// Tagging permission evaluation and the tag listing say the same.
func TestADOTagCreateRight(t *testing.T) {
	t.Parallel()
	s, srv := newADOSim(t)
	n := s.CreateIssue("org/proj", "first", "", "bug")
	if err := s.DefineTags("org/proj", "Known"); err != nil {
		t.Fatal(err)
	}
	s.SetAccess(adoTestPAT, Access{CannotCreateTags: true})
	item := srv.URL + "/ado/org/proj/_apis/wit/workItems/1"
	patch := func(tags string) (*http.Response, map[string]any) {
		return adoDo(t, "PATCH", item, "application/json-patch+json",
			`[{"op":"replace","path":"/fields/System.Tags","value":"`+tags+`"}]`)
	}
	if resp, body := patch("bug; known"); resp.StatusCode != http.StatusOK {
		t.Fatalf("existing tags: %d %v", resp.StatusCode, body)
	}
	resp, body := patch("bug; Known; brand-new")
	if resp.StatusCode != http.StatusForbidden || body["typeKey"] != "AccessCheckException" ||
		body["message"] != "TF401289: The current user does not have permissions to create tags." {
		t.Fatalf("new tag: %d %v, want 403 TF401289", resp.StatusCode, body)
	}
	if cp, _ := body["customProperties"].(map[string]any); cp["RequestedPermissions"] != float64(2) {
		t.Errorf("customProperties %v, want RequestedPermissions 2", body["customProperties"])
	}
	if is, _ := s.Issue("org/proj", n); !slices.Equal(is.Labels, []string{"bug", "Known"}) {
		t.Errorf("labels %q after the refusal, want the accepted ones", is.Labels)
	}

	perm := srv.URL + "/ado/org/_apis/permissions/" + adoTaggingNamespace + "/2?tokens=/p1,/p2"
	if resp, body := adoDo(t, "GET", perm, "", ""); resp.StatusCode != 200 || !slices.Equal(body["value"].([]any), []any{false, false}) {
		t.Errorf("Create evaluation without the right: %d %v", resp.StatusCode, body)
	}
	s.SetAccess(adoTestPAT, Access{})
	if resp, body := adoDo(t, "GET", perm, "", ""); resp.StatusCode != 200 || !slices.Equal(body["value"].([]any), []any{true, true}) {
		t.Errorf("Create evaluation with the right: %d %v", resp.StatusCode, body)
	}
	if resp, body := patch("bug; Known; brand-new"); resp.StatusCode != http.StatusOK {
		t.Fatalf("new tag with the right: %d %v", resp.StatusCode, body)
	}
	resp, body = adoDo(t, "GET", srv.URL+"/ado/org/proj/_apis/wit/tags", "", "")
	var names []string
	for _, v := range body["value"].([]any) {
		names = append(names, v.(map[string]any)["name"].(string))
	}
	if resp.StatusCode != 200 || !slices.Equal(names, []string{"brand-new", "bug", "Known"}) {
		t.Errorf("tags %d %q, want the three defined", resp.StatusCode, names)
	}
}

// A work item that breaks a rule on another field refuses every update, a
// tags-only one too, with 400 TF401320 naming the field and the rule
// errors in customProperties; comments still go through.
func TestADOBrokenRuleRefusesEveryUpdate(t *testing.T) {
	t.Parallel()
	s, srv := newADOSim(t)
	n := s.CreateIssue("org/proj", "first", "", "bug")
	s.BreakRequiredField("org/proj", n, "Microsoft.VSTS.Common.Activity")
	item := srv.URL + "/ado/org/proj/_apis/wit/workItems/1"
	resp, body := adoDo(t, "PATCH", item, "application/json-patch+json", `[{"op":"add","path":"/fields/System.Tags","value":"x"}]`)
	if resp.StatusCode != http.StatusBadRequest || body["typeKey"] != "RuleValidationException" ||
		body["message"] != "TF401320: Rule Error for field Activity. Error code: Required, InvalidEmpty." {
		t.Fatalf("tags-only update: %d %v, want 400 TF401320", resp.StatusCode, body)
	}
	cp, _ := body["customProperties"].(map[string]any)
	errs, _ := cp["RuleValidationErrors"].([]any)
	if len(errs) != 1 || errs[0].(map[string]any)["fieldReferenceName"] != "Microsoft.VSTS.Common.Activity" {
		t.Errorf("customProperties %v", cp)
	}
	if resp, _ := adoDo(t, "POST", item+"/comments?format=markdown", "application/json", `{"text":"hi"}`); resp.StatusCode != 200 {
		t.Errorf("comment: %d", resp.StatusCode)
	}
	s.BreakRequiredField("org/proj", n, "")
	if resp, body := adoDo(t, "PATCH", item, "application/json-patch+json", `[{"op":"add","path":"/fields/System.Tags","value":"x"}]`); resp.StatusCode != 200 {
		t.Errorf("after the fix: %d %v", resp.StatusCode, body)
	}
}
