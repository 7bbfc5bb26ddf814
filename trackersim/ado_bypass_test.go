package trackersim

import (
	"testing"
)

// TestADOBypassRulesChangedBy pins what a bypass-rules update records: the
// System.ChangedBy it writes (and revisedBy, which shows it), and the
// authenticated identity in System.AuthorizedAs, which no request writes;
// without bypassRules the written ChangedBy is disregarded. A comment
// written through System.History is authored by the authenticated identity.
func TestADOBypassRulesChangedBy(t *testing.T) {
	t.Parallel()
	s, srv := newADOSim(t)
	s.SetAccess(adoTestPAT, Access{Login: "integration"})
	s.CreateIssue("Org/Bypass", "forged", "", "bug")
	wi := srv.URL + "/ado/Org/Bypass/_apis/wit/workItems/1"
	const patch = "application/json-patch+json"
	forged := `{"op":"add","path":"/fields/System.ChangedBy","value":"Approver <approver@sim.invalid>"}`
	uniq := func(m map[string]any, field string) string {
		f, _ := m["fields"].(map[string]any)
		id, _ := f[field].(map[string]any)
		s, _ := id["uniqueName"].(string)
		return s
	}

	cases := []struct {
		query, tag      string
		changed, authAs string
	}{
		{"?bypassRules=true", "approved", "approver@sim.invalid", "integration@sim.invalid"},
		{"", "rejected", "integration@sim.invalid", "integration@sim.invalid"},
		{"?bypassRules=false", "other", "integration@sim.invalid", "integration@sim.invalid"},
	}
	for _, c := range cases {
		resp, out := adoDo(t, "PATCH", wi+c.query, patch, `[`+forged+`,{"op":"add","path":"/fields/System.Tags","value":"`+c.tag+`"}]`)
		if resp.StatusCode != 200 {
			t.Fatalf("%q: PATCH = %d %v", c.query, resp.StatusCode, out)
		}
		if uniq(out, "System.ChangedBy") != c.changed || uniq(out, "System.AuthorizedAs") != c.authAs {
			t.Errorf("%q: ChangedBy %q AuthorizedAs %q, want %q %q", c.query, uniq(out, "System.ChangedBy"), uniq(out, "System.AuthorizedAs"), c.changed, c.authAs)
		}
	}
	_, ups := adoDo(t, "GET", srv.URL+"/ado/Org/Bypass/_apis/wit/workItems/1/updates", "", "")
	vals, _ := ups["value"].([]any)
	if len(vals) != 4 {
		t.Fatalf("updates: %v", ups)
	}
	first, _ := vals[1].(map[string]any)
	rb, _ := first["revisedBy"].(map[string]any)
	fields, _ := first["fields"].(map[string]any)
	auth, _ := fields["System.AuthorizedAs"].(map[string]any)
	nv, _ := auth["newValue"].(map[string]any)
	if rb["uniqueName"] != "approver@sim.invalid" || nv["uniqueName"] != "integration@sim.invalid" {
		t.Errorf("bypass update: revisedBy %v, AuthorizedAs %v", rb, auth)
	}

	resp, out := adoDo(t, "PATCH", wi+"?bypassRules=true", patch, `[`+forged+`,{"op":"add","path":"/fields/System.History","value":"hello"}]`)
	if resp.StatusCode != 200 || uniq(out, "System.AuthorizedAs") != "integration@sim.invalid" {
		t.Fatalf("History PATCH = %d %v", resp.StatusCode, out)
	}
	is, _ := s.Issue("Org/Bypass", 1)
	if len(is.Comments) != 1 || is.Comments[0].Author != "integration" {
		t.Errorf("comments %+v: want one by integration", is.Comments)
	}
}
