package trackersim

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
)

// A project whose Edit screen lacks Labels refuses the REST label edit
// with Jira's 400 body and leaves labels out of editmeta; a status with
// jira.issue.editable=false refuses it the same way and lists no field,
// yet takes comments; a person's edit goes through either way; the
// default project accepts the edit and lists labels.
func TestJiraEditScreenAndNonEditableStatus(t *testing.T) {
	t.Parallel()
	s, api := startJira(t)
	n := s.CreateIssue("PROJ", "screen", "", "agent-smith")
	issue := api + "3/issue/PROJ-1"
	addLabel := map[string]any{"update": map[string]any{"labels": []map[string]string{{"add": "x"}}}}
	metaFields := func() []string {
		t.Helper()
		a := jiraDo(t, "GET", issue+"/editmeta", "", nil)
		if a.code != http.StatusOK {
			t.Fatalf("editmeta %d %s", a.code, a.body)
		}
		var m struct {
			Fields map[string]struct {
				Key string `json:"key"`
			} `json:"fields"`
		}
		if err := json.Unmarshal(a.body, &m); err != nil || m.Fields == nil {
			t.Fatalf("editmeta body %s: %v", a.body, err)
		}
		var out []string
		for k, f := range m.Fields {
			if f.Key != k {
				t.Errorf("editmeta field %q has key %q", k, f.Key)
			}
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	refused := func(what string) {
		t.Helper()
		a := jiraDo(t, "PUT", issue, "", addLabel)
		if a.code != http.StatusBadRequest {
			t.Fatalf("%s: edit answered %d %s, want 400", what, a.code, a.body)
		}
		e := a.errs(t)
		if want := "Field 'labels' cannot be set. It is not on the appropriate screen, or unknown."; e.Errors["labels"] != want || len(e.ErrorMessages) != 0 {
			t.Errorf("%s: body %s, want errors.labels %q", what, a.body, want)
		}
	}

	if got := metaFields(); !slices.Contains(got, "labels") {
		t.Fatalf("default editmeta %v lacks labels", got)
	}
	if a := jiraDo(t, "PUT", issue, "", addLabel); a.code != http.StatusNoContent {
		t.Fatalf("default edit %d %s", a.code, a.body)
	}

	s.SetJiraLabelsOnEditScreen("PROJ", "Task", false)
	refused("labels off the screen")
	if got := metaFields(); slices.Contains(got, "labels") || !slices.Contains(got, "summary") {
		t.Errorf("editmeta %v: want summary without labels", got)
	}
	if err := s.AddLabels("PROJ", n, "by-hand"); err != nil {
		t.Errorf("a person's label edit: %v", err)
	}
	// Another project keeps its screen.
	s.CreateIssue("OTHER", "other", "")
	if a := jiraDo(t, "PUT", api+"3/issue/OTHER-1", "", addLabel); a.code != http.StatusNoContent {
		t.Errorf("OTHER's edit %d %s", a.code, a.body)
	}
	s.SetJiraLabelsOnEditScreen("PROJ", "Task", true)

	s.SetJiraStatusEditable("PROJ", "Done", false)
	if a := jiraDo(t, "PUT", issue, "", addLabel); a.code != http.StatusNoContent {
		t.Errorf("an open issue while Done is frozen: %d %s", a.code, a.body)
	}
	if err := s.SetOpen("PROJ", n, false); err != nil {
		t.Fatal(err)
	}
	refused("a Done issue")
	if got := metaFields(); len(got) != 0 {
		t.Errorf("editmeta in a non-editable status lists %v, want none", got)
	}
	if a := jiraDo(t, "POST", api+"2/issue/PROJ-1/comment", "", map[string]any{"body": "closed but commented"}); a.code != http.StatusCreated {
		t.Errorf("comment in a non-editable status: %d %s, want 201", a.code, a.body)
	}
	is, _ := s.Issue("PROJ", n)
	if !slices.Contains(is.Labels, "x") || !slices.Contains(is.Labels, "by-hand") || len(is.Comments) != 1 {
		t.Errorf("labels %v, %d comments: want x, by-hand and the one comment", is.Labels, len(is.Comments))
	}
}
