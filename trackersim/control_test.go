package trackersim

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestControlAPIAndPage(t *testing.T) {
	t.Parallel()
	s, _, srv := start(t, Options{})
	hc := srv.Client()
	post := func(path, body string) *http.Response {
		t.Helper()
		resp, err := hc.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	resp := post("/sim/issues", `{"repo":"demo/app","title":"from curl","body":"b","labels":["bug"]}`)
	var created struct{ Number int }
	if err := json.NewDecoder(resp.Body).Decode(&created); err != nil || resp.StatusCode != 201 || created.Number != 1 {
		t.Fatalf("create: %d %v %+v", resp.StatusCode, err, created)
	}
	resp.Body.Close()

	resp = post("/sim/faults", `{"Latency":"1ms","ErrorRate":0,"Seed":3}`)
	resp.Body.Close()
	if f := s.faults.get(); resp.StatusCode != 200 || f.Latency.Milliseconds() != 1 || f.Seed != 3 {
		t.Fatalf("faults: %d %+v", resp.StatusCode, f)
	}
	s.SetFaults(Faults{})

	// The page's button adds the trigger label as a human and redirects back.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp = post("/sim/github/demo/app/issues/1/labels?label=agent-smith", "")
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("label button: %d", resp.StatusCode)
	}
	is, _ := s.Issue("demo/app", 1)
	if !slices.Equal(is.Labels, []string{"bug", "agent-smith"}) {
		t.Fatalf("labels = %v", is.Labels)
	}
	if ws := s.Writes(); len(ws) != 1 || ws[0].Writer != "human" {
		t.Fatalf("writes = %+v", ws)
	}

	get := func(path string) string {
		t.Helper()
		resp, err := hc.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	var issues []Issue
	if err := json.Unmarshal([]byte(get("/sim/issues")), &issues); err != nil || len(issues) != 1 || issues[0].Title != "from curl" {
		t.Fatalf("issues: %v %+v", err, issues)
	}
	var writes []Write
	if err := json.Unmarshal([]byte(get("/sim/writes")), &writes); err != nil || len(writes) != 1 {
		t.Fatalf("writes: %v %+v", err, writes)
	}
	var st Stats
	if err := json.Unmarshal([]byte(get("/sim/stats")), &st); err != nil || st.Calls == nil {
		t.Fatalf("stats: %v %+v", err, st)
	}
	page := get("/")
	for _, want := range []string{"from curl", "demo/app#1", "agent-smith", "background:#7057ff", `http-equiv="refresh"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// The button is offered only where the trigger label is missing: not
	// on #1, which has it, but on #2 and on #3, whose "Agent-Smith" is
	// another spelling of the same label.
	s.CreateIssue("demo/app", "without the trigger", "", "bug")
	s.CreateIssue("demo/app", "with the trigger in capitals", "", "Agent-Smith")
	page = get("/")
	buttons := regexp.MustCompile(`action="/sim/labels\?label=agent-smith&amp;number=(\d+)&amp;repo=demo%2Fapp"><button type="submit">add trigger label`).FindAllStringSubmatch(page, -1)
	if len(buttons) != 1 || buttons[0][1] != "2" {
		t.Errorf("add trigger label buttons for issues %v, want #2 only:\n%s", buttons, page)
	}
}

// The control API acts as the user "as" names, and the permission endpoint
// reports that user's role.
func TestControlActsAsNamedUser(t *testing.T) {
	t.Parallel()
	s, _, srv := start(t, Options{})
	resp, err := testClient.Post(srv.URL+"/sim/issues", "application/json",
		strings.NewReader(`{"repo":"o/r","title":"t","labels":["agent-smith"],"as":"mallory"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	hist, err := s.store.labelHistory("o/r", 1)
	if err != nil || len(hist) != 1 || hist[0].login != "mallory" {
		t.Fatalf("history = %+v, %v; want one change by mallory", hist, err)
	}
	s.SetUserRole("mallory", RoleTriage)
	for login, want := range map[string]string{"mallory": "read", HumanLogin: "write", "nobody": "none"} {
		resp, err := testClient.Get(srv.URL + "/github/repos/o/r/collaborators/" + login + "/permission")
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Permission string `json:"permission"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if got.Permission != want {
			t.Errorf("%s: permission %q, want %q", login, got.Permission, want)
		}
	}
}
