package trackersim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/jira"
)

const jiraToken = "jira-token"

func startJira(t *testing.T) (*Sim, string) {
	t.Helper()
	s := New(Options{Tokens: []string{jiraToken}})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv.URL + "/jira/rest/api/"
}

type jiraAnswer struct {
	code   int
	header http.Header
	body   []byte
}

// errs decodes Jira's error body.
func (a jiraAnswer) errs(t *testing.T) jiraErrors {
	t.Helper()
	var e jiraErrors
	if err := json.Unmarshal(a.body, &e); err != nil || e.ErrorMessages == nil || e.Errors == nil {
		t.Fatalf("error body %s: want {errorMessages, errors} (%v)", a.body, err)
	}
	return e
}

// jiraDo sends one request with basic auth (Cloud style) unless auth is set.
func jiraDo(t *testing.T, method, u, auth string, body any) jiraAnswer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Agentsmith-Writer", "sim-test")
	if auth == "" {
		req.SetBasicAuth("bot@example.com", jiraToken)
	} else {
		req.Header.Set("Authorization", auth)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return jiraAnswer{code: resp.StatusCode, header: resp.Header, body: b}
}

func TestJiraGetIssue(t *testing.T) {
	t.Parallel()
	s, api := startJira(t)
	n := s.CreateIssue("OPS", "Deploy", "line 1\nline 2\n\npara 2", "b", "a")

	a := jiraDo(t, "GET", api+"2/issue/OPS-1?fields=summary,description,labels,status", "Bearer "+jiraToken, nil)
	if a.code != 200 || n != 1 {
		t.Fatalf("v2 get: %d %s", a.code, a.body)
	}
	var v2 struct {
		Key    string         `json:"key"`
		Self   string         `json:"self"`
		Fields map[string]any `json:"fields"`
	}
	if err := json.Unmarshal(a.body, &v2); err != nil {
		t.Fatal(err)
	}
	st := v2.Fields["status"].(map[string]any)["statusCategory"].(map[string]any)
	if v2.Key != "OPS-1" || v2.Fields["summary"] != "Deploy" || v2.Fields["description"] != "line 1\nline 2\n\npara 2" ||
		st["key"] != "new" || !strings.Contains(v2.Self, "/jira/rest/api/2/issue/") {
		t.Errorf("v2 issue %s", a.body)
	}
	if _, ok := v2.Fields["project"]; ok || len(v2.Fields) != 4 {
		t.Errorf("fields parameter not honoured: %v", v2.Fields)
	}

	s.SetOpen("OPS", 1, false)
	a = jiraDo(t, "GET", api+"3/issue/OPS-1", "", nil)
	var v3 struct {
		Fields struct {
			Description json.RawMessage `json:"description"`
			Labels      []string        `json:"labels"`
			Status      jiraStatus      `json:"status"`
			Project     jiraProject     `json:"project"`
		} `json:"fields"`
	}
	if err := json.Unmarshal(a.body, &v3); err != nil {
		t.Fatal(err)
	}
	if jira.ADFToText(v3.Fields.Description) != "line 1\nline 2\n\npara 2" || v3.Fields.Status.StatusCategory.Key != "done" ||
		v3.Fields.Project.Key != "OPS" || !slices.Equal(v3.Fields.Labels, []string{"b", "a"}) {
		t.Errorf("v3 issue %s", a.body)
	}

	for _, u := range []string{api + "3/issue/OPS-9", api + "3/issue/NOPE-1", api + "3/issue/garbage"} {
		a = jiraDo(t, "GET", u, "", nil)
		if a.code != 404 || a.errs(t).ErrorMessages[0] != jiraIssueMissing {
			t.Errorf("GET %s: %d %s", u, a.code, a.body)
		}
	}
	if a = jiraDo(t, "GET", api+"4/issue/OPS-1", "", nil); a.code != 404 {
		t.Errorf("unknown API version: %d", a.code)
	}
	if a = jiraDo(t, "GET", api+"3/issue/OPS-1", "Bearer wrong", nil); a.code != 401 || len(a.errs(t).ErrorMessages) != 1 {
		t.Errorf("bad token: %d %s", a.code, a.body)
	}
}

func TestJiraEditLabels(t *testing.T) {
	t.Parallel()
	s, api := startJira(t)
	s.CreateIssue("OPS", "Labels", "", "keep", "agent-smith:pending", "日本語")
	put := func(body any) jiraAnswer { return jiraDo(t, "PUT", api+"3/issue/OPS-1", "", body) }
	labels := func() []string { is, _ := s.Issue("OPS", 1); return is.Labels }

	a := put(map[string]any{"update": map[string]any{"labels": []map[string]string{
		{"remove": "agent-smith:pending"}, {"remove": "absent"}, {"add": "agent-smith:enqueued"}, {"add": "keep"},
	}}})
	if a.code != 204 || len(a.body) != 0 {
		t.Fatalf("update: %d %s", a.code, a.body)
	}
	if got := labels(); !slices.Equal(got, []string{"keep", "日本語", "agent-smith:enqueued"}) {
		t.Errorf("labels %q", got)
	}
	w := s.Writes()
	if last := w[len(w)-1]; last.Writer != "sim-test" || last.Repo != "OPS" || last.Number != 1 {
		t.Errorf("write log %+v", last)
	}
	// Operations apply in order: add then remove of the same label removes it.
	if a = put(map[string]any{"update": map[string]any{"labels": []map[string]string{{"add": "x"}, {"remove": "x"}}}}); a.code != 204 {
		t.Fatalf("add+remove: %d", a.code)
	}
	if got := labels(); slices.Contains(got, "x") {
		t.Errorf("labels %q still hold x", got)
	}
	if a = put(map[string]any{"fields": map[string]any{"labels": []string{"only"}}}); a.code != 204 || !slices.Equal(labels(), []string{"only"}) {
		t.Errorf("fields.labels: %d %q", a.code, labels())
	}
	if a = put(map[string]any{"update": map[string]any{"labels": []map[string]any{{"set": []string{"s1", "s2"}}}}}); a.code != 204 || !slices.Equal(labels(), []string{"s1", "s2"}) {
		t.Errorf("set: %d %q", a.code, labels())
	}

	for name, body := range map[string]any{
		"space":         map[string]any{"update": map[string]any{"labels": []map[string]string{{"add": "has space"}}}},
		"unknown field": map[string]any{"fields": map[string]any{"summary": "x"}},
		"unknown op":    map[string]any{"update": map[string]any{"labels": []map[string]string{{"copy": "x"}}}},
	} {
		a = put(body)
		if e := a.errs(t); a.code != 400 || len(e.Errors) != 1 {
			t.Errorf("%s: %d %s", name, a.code, a.body)
		}
	}
	if e := put(map[string]any{"update": map[string]any{"labels": []map[string]string{{"add": "has space"}}}}).errs(t); e.Errors["labels"] != "The label 'has space' contains spaces which is invalid." {
		t.Errorf("space message %q", e.Errors["labels"])
	}
	if !slices.Equal(labels(), []string{"s1", "s2"}) {
		t.Errorf("a refused request changed labels: %q", labels())
	}
	if a = jiraDo(t, "PUT", api+"3/issue/OPS-9", "", map[string]any{}); a.code != 404 {
		t.Errorf("missing issue: %d", a.code)
	}
}

// Jira Cloud's edit answers 200 with the issue as Get issue returns it when
// asked (returnIssue=true); REST v2 (Data Center's) and a Data Center site
// answer 204 without a body whatever the query.
func TestJiraEditReturnIssue(t *testing.T) {
	t.Parallel()
	s, api := startJira(t)
	s.CreateIssue("OPS", "Answer me", "the body", "keep", "agent-smith:pending")
	edit := map[string]any{"update": map[string]any{"labels": []map[string]string{
		{"remove": "agent-smith:pending"}, {"add": "agent-smith:enqueued"}}}}

	a := jiraDo(t, "PUT", api+"3/issue/OPS-1?returnIssue=true", "", edit)
	if a.code != 200 {
		t.Fatalf("returnIssue on Cloud v3: %d %s", a.code, a.body)
	}
	var is struct {
		Key    string `json:"key"`
		Fields struct {
			Summary     string          `json:"summary"`
			Description json.RawMessage `json:"description"`
			Labels      []string        `json:"labels"`
			Status      jiraStatus      `json:"status"`
		} `json:"fields"`
	}
	if err := json.Unmarshal(a.body, &is); err != nil {
		t.Fatal(err)
	}
	if is.Key != "OPS-1" || is.Fields.Summary != "Answer me" || jira.ADFToText(is.Fields.Description) != "the body" ||
		!slices.Equal(is.Fields.Labels, []string{"keep", "agent-smith:enqueued"}) || is.Fields.Status.StatusCategory.Key != "new" {
		t.Errorf("answer %s: want the issue as written", a.body)
	}
	if got := jiraDo(t, "GET", api+"3/issue/OPS-1", "", nil); !bytes.Equal(got.body, a.body) {
		t.Errorf("answer differs from Get issue:\n%s\n%s", a.body, got.body)
	}

	if a = jiraDo(t, "PUT", api+"2/issue/OPS-1?returnIssue=true", "Bearer "+jiraToken, edit); a.code != 204 || len(a.body) != 0 {
		t.Errorf("returnIssue over REST v2: %d %s, want 204 without a body", a.code, a.body)
	}
	s.SetJiraDeployment(JiraDataCenter)
	if a = jiraDo(t, "PUT", api+"3/issue/OPS-1?returnIssue=true", "", edit); a.code != 204 || len(a.body) != 0 {
		t.Errorf("returnIssue on Data Center: %d %s, want 204 without a body", a.code, a.body)
	}
}

func TestJiraComments(t *testing.T) {
	t.Parallel()
	s, api := startJira(t)
	s.CreateIssue("OPS", "Talk", "")
	adf := json.RawMessage(`{"type":"doc","version":1,"content":[
		{"type":"paragraph","content":[{"type":"text","text":"Run failed:"}]},
		{"type":"codeBlock","attrs":{"language":"text"},"content":[{"type":"text","text":"exit 1"}]}]}`)
	a := jiraDo(t, "POST", api+"3/issue/OPS-1/comment", "", map[string]any{"body": adf})
	if a.code != 201 {
		t.Fatalf("v3 comment: %d %s", a.code, a.body)
	}
	a = jiraDo(t, "POST", api+"2/issue/OPS-1/comment", "Bearer "+jiraToken, map[string]any{"body": "plain"})
	if a.code != 201 {
		t.Fatalf("v2 comment: %d %s", a.code, a.body)
	}
	is, _ := s.Issue("OPS", 1)
	if len(is.Comments) != 2 || is.Comments[0].Body != "Run failed:\n\n```text\nexit 1\n```" || is.Comments[1].Body != "plain" ||
		is.Comments[0].Author != botLogin {
		t.Errorf("comments %+v", is.Comments)
	}
	for name, c := range map[string]struct {
		v    string
		body any
	}{
		"v3 string":     {"3", "plain"},
		"v3 not a doc":  {"3", map[string]any{"type": "paragraph"}},
		"v3 empty text": {"3", json.RawMessage(`{"type":"doc","version":1,"content":[{"type":"paragraph","content":[{"type":"text","text":""}]}]}`)},
		"v2 object":     {"2", adf},
		"v2 empty":      {"2", " "},
	} {
		if a = jiraDo(t, "POST", api+c.v+"/issue/OPS-1/comment", "", map[string]any{"body": c.body}); a.code != 400 || len(a.errs(t).Errors) != 1 {
			t.Errorf("%s: %d %s", name, a.code, a.body)
		}
	}
}

func TestJiraSearch(t *testing.T) {
	t.Parallel()
	s, api := startJira(t)
	// Paging and JQL here; the index's lag has TestJiraSearchLag.
	s.SetJiraSearchLag(0)
	for i := 0; i < 7; i++ {
		s.CreateIssue("OPS", "match", "", "agent-smith:pending")
	}
	s.CreateIssue("OPS", "case variant", "", "Agent-Smith:pending")
	s.CreateIssue("OPS", "closed", "", "agent-smith:pending")
	s.SetOpen("OPS", 9, false)
	s.CreateIssue("OTHER", "other project", "", "agent-smith:pending")
	jql := jira.ListQuery("OPS", "agent-smith:pending")
	keysOf := func(body []byte) (keys []string, res map[string]any) {
		var r struct {
			Issues []struct {
				Key string `json:"key"`
			} `json:"issues"`
		}
		_ = json.Unmarshal(body, &r)
		_ = json.Unmarshal(body, &res)
		for _, is := range r.Issues {
			keys = append(keys, is.Key)
		}
		return keys, res
	}

	// Data Center: offset pages with total.
	var got []string
	for start := 0; ; {
		q := url.Values{"jql": {jql}, "startAt": {strconv.Itoa(start)}, "maxResults": {"3"}, "fields": {"labels"}}
		a := jiraDo(t, "GET", api+"2/search?"+q.Encode(), "", nil)
		if a.code != 200 {
			t.Fatalf("v2 search: %d %s", a.code, a.body)
		}
		keys, res := keysOf(a.body)
		if res["total"] != float64(7) || res["maxResults"] != float64(3) || res["startAt"] != float64(start) {
			t.Fatalf("page %s", a.body)
		}
		got = append(got, keys...)
		start += len(keys)
		if start >= 7 {
			break
		}
	}
	if want := []string{"OPS-1", "OPS-2", "OPS-3", "OPS-4", "OPS-5", "OPS-6", "OPS-7"}; !slices.Equal(got, want) {
		t.Errorf("v2 pages %q", got)
	}

	// Cloud: token pages without total; the removed endpoint is 410.
	got = nil
	q := url.Values{"jql": {jql}, "maxResults": {"4"}}
	for pages := 0; ; pages++ {
		a := jiraDo(t, "GET", api+"3/search/jql?"+q.Encode(), "", nil)
		keys, res := keysOf(a.body)
		if a.code != 200 || res["total"] != nil {
			t.Fatalf("search/jql: %d %s", a.code, a.body)
		}
		got = append(got, keys...)
		if res["isLast"] == true {
			if res["nextPageToken"] != nil || pages != 1 {
				t.Errorf("last page %s after %d pages", a.body, pages)
			}
			break
		}
		q.Set("nextPageToken", res["nextPageToken"].(string))
	}
	if len(got) != 7 || got[6] != "OPS-7" {
		t.Errorf("v3 pages %q", got)
	}
	desc := url.Values{"jql": {`labels = agent-smith:pending AND project = OPS ORDER BY key DESC`}}
	if keys, _ := keysOf(jiraDo(t, "GET", api+"3/search/jql?"+desc.Encode(), "", nil).body); len(keys) != 8 || keys[0] != "OPS-9" {
		t.Errorf("bare values, DESC, no status clause: %q", keys)
	}
	if a := jiraDo(t, "GET", api+"3/search?"+url.Values{"jql": {jql}}.Encode(), "", nil); a.code != 410 ||
		!strings.Contains(a.errs(t).ErrorMessages[0], "/rest/api/3/search/jql") {
		t.Errorf("v3 search: %d %s", a.code, a.body)
	}

	// No project clause (AcrossQuery): every project of the site.
	across := url.Values{"jql": {`labels = "agent-smith:pending" ORDER BY key ASC`}}
	if keys, _ := keysOf(jiraDo(t, "GET", api+"3/search/jql?"+across.Encode(), "", nil).body); !slices.Contains(keys, "OTHER-1") || !slices.Contains(keys, "OPS-1") {
		t.Errorf("no project clause: %q, want the issues of OPS and OTHER", keys)
	}

	// A scope over projects: OR, in, parentheses.
	scope := url.Values{"jql": {`(project in (OPS, other) OR project = OPS) AND labels = "agent-smith:pending" AND statusCategory != Done ORDER BY key ASC`}}
	if keys, _ := keysOf(jiraDo(t, "GET", api+"2/search?"+scope.Encode(), "", nil).body); !slices.Contains(keys, "OTHER-1") || !slices.Contains(keys, "OPS-1") || slices.Contains(keys, "OPS-9") {
		t.Errorf("project in: %q, want the open issues of OPS and OTHER", keys)
	}

	for name, q := range map[string]string{
		"other field":    `project = "OPS" AND assignee = "me"`,
		"~":              `project = "OPS" AND summary ~ "x"`,
		"unterminated":   `project = "OPS`,
		"trailing AND":   `project = "OPS" AND`,
		"ORDER BY other": `project = "OPS" ORDER BY created`,
		"unknown":        `project = "NOPE"`,
		"unknown in":     `project in (OPS, NOPE)`,
	} {
		a := jiraDo(t, "GET", api+"2/search?"+url.Values{"jql": {q}}.Encode(), "", nil)
		if e := a.errs(t); a.code != 400 || len(e.ErrorMessages) != 1 {
			t.Errorf("%s: %d %s", name, a.code, a.body)
		} else if !strings.HasPrefix(name, "unknown") && !strings.Contains(e.ErrorMessages[0], "supports the fields") {
			t.Errorf("%s: message %q does not say what is supported", name, e.ErrorMessages[0])
		}
	}
	if a := jiraDo(t, "GET", api+"3/search/jql?"+url.Values{"jql": {jql}, "nextPageToken": {"bogus"}}.Encode(), "", nil); a.code != 400 {
		t.Errorf("bad token: %d", a.code)
	}
}

func TestJiraFaults(t *testing.T) {
	t.Parallel()
	s, api := startJira(t)
	s.CreateIssue("OPS", "x", "")
	s.SetFaults(Faults{RateLimitNext: 1, RetryAfter: 7})
	a := jiraDo(t, "GET", api+"3/issue/OPS-1", "", nil)
	if a.code != 429 || a.header.Get("Retry-After") != "7" || len(a.errs(t).ErrorMessages) != 1 {
		t.Fatalf("rate limit: %d %v %s", a.code, a.header, a.body)
	}
	if a = jiraDo(t, "GET", api+"3/issue/OPS-1", "", nil); a.code != 200 {
		t.Fatalf("after the fault: %d", a.code)
	}
	if n := s.Stats().Calls["GET /jira/rest/api/{v}/issue/{key}"]; n != 2 {
		t.Errorf("calls counted %d, want 2", n)
	}
}

// TestJiraWebhooks: deliveries are Jira-shaped, signed, and parse with the
// daemon's decoder into the events the lifecycle acts on.
func TestJiraWebhooks(t *testing.T) {
	t.Parallel()
	s, api := startJira(t)
	type got struct {
		header http.Header
		body   []byte
	}
	ch := make(chan got, 20)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ch <- got{r.Header.Clone(), b}
	}))
	t.Cleanup(rcv.Close)
	s.AddHook(Hook{Repo: "OPS", URL: rcv.URL, Secret: "hook-secret", Dialect: "jira"})
	s.AddHook(Hook{Repo: "OPS", URL: rcv.URL + "/unsigned", Dialect: "jira"})
	s.CreateIssue("OTHER", "not this project", "")

	s.CreateIssue("OPS", "Deploy", "please", "infra")
	s.AddLabels("OPS", 1, "agent-smith")
	jiraDo(t, "PUT", api+"3/issue/OPS-1", "", map[string]any{"update": map[string]any{"labels": []map[string]string{{"remove": "infra"}}}})
	s.SetOpen("OPS", 1, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	close(ch)
	var signed []got
	for d := range ch {
		if d.header.Get("X-Hub-Signature") != "" {
			signed = append(signed, d)
		} else if d.header.Get(jira.HeaderDelivery) == "" {
			t.Errorf("unsigned delivery without identifier: %v", d.header)
		}
	}
	if len(signed) != 4 {
		t.Fatalf("%d signed deliveries, want 4", len(signed))
	}
	want := []struct {
		name   string
		kind   platforms.EventKind
		labels []string
		open   bool
	}{
		{"jira:issue_created", platforms.EventTicket, []string{"infra"}, true},
		{"jira:issue_updated", platforms.EventTicket, []string{"infra", "agent-smith"}, true},
		{"jira:issue_updated", platforms.EventTicket, []string{"agent-smith"}, true},
		{"jira:issue_updated", platforms.EventTicket, []string{"agent-smith"}, false},
	}
	ids := map[string]bool{}
	for i, d := range signed {
		if _, err := (jira.Webhooks{}).Verify(d.header, d.body, [][]byte{[]byte("hook-secret")}); err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
		ev, err := (jira.Webhooks{}).Parse(d.header, d.body)
		if err != nil {
			t.Fatalf("delivery %d: %v\n%s", i, err, d.body)
		}
		w := want[i]
		if ev.Name != w.name || ev.Kind != w.kind || ev.Locator != "OPS" || ev.DeliveryID == "" || ids[ev.DeliveryID] {
			t.Errorf("delivery %d: %+v, want %s kind %d", i, ev, w.name, w.kind)
		}
		ids[ev.DeliveryID] = true
		if w.kind == platforms.EventTicket && (ev.Ticket.Ref.ID != "OPS-1" || !slices.Equal(ev.Ticket.Labels, w.labels) ||
			ev.Ticket.Open != w.open || ev.Ticket.Body != "please" || !strings.HasSuffix(ev.Ticket.URL, "/browse/OPS-1")) {
			t.Errorf("delivery %d ticket %+v", i, ev.Ticket)
		}
	}
	var upd jiraWebhookEvent
	_ = json.Unmarshal(signed[2].body, &upd)
	if it := upd.Changelog.Items; len(it) != 1 || it[0].Field != "labels" || !sameWords(*it[0].FromString, "infra agent-smith") || *it[0].ToString != "agent-smith" {
		t.Errorf("unlabel changelog %s", signed[2].body)
	}
	_ = json.Unmarshal(signed[3].body, &upd)
	if it := upd.Changelog.Items; upd.IssueEventTypeName != "issue_generic" || len(it) != 1 || it[0].Field != "status" || *it[0].ToString != "Done" {
		t.Errorf("close changelog %s", signed[3].body)
	}
}

// sameWords compares space-separated sets: Jira's changelog does not
// promise an order.
func sameWords(a, b string) bool {
	x, y := strings.Fields(a), strings.Fields(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

func TestParseJQL(t *testing.T) {
	t.Parallel()
	open := func(repo string, number int, labels, components []string) snapshot {
		sn := snapshot{repo: repo, number: number, open: true, components: components}
		for _, l := range labels {
			sn.labels = append(sn.labels, label{name: l})
		}
		return sn
	}
	a1 := open("A", 1, []string{"it's", "x"}, []string{"Payments"})
	a2 := open("A", 2, nil, []string{"Search"})
	b1 := open("B", 1, []string{"x"}, nil)
	c1 := open("C", 1, []string{"x"}, []string{"payments"})
	done := open("A", 3, []string{"x"}, []string{"Payments"})
	done.open = false
	all := []snapshot{a1, a2, b1, c1, done}
	for _, tc := range []struct {
		jql  string
		want []string // issue keys, in all's order
		desc bool
	}{
		{`statusCategory != "Done" and labels = 'it\'s' AND project = "a" order by KEY asc`, []string{"A-1"}, false},
		{`project = A AND statusCategory = Done`, []string{"A-3"}, false},
		{`project in (A, B) AND component = Payments`, []string{"A-1", "A-3"}, false},
		{`(project in (A, B) OR project = C) AND component = "PAYMENTS" AND statusCategory != Done`, []string{"A-1", "C-1"}, false},
		{`component != Payments`, []string{"A-2"}, false}, // != never matches an empty field (B-1)
		{`component is EMPTY`, []string{"B-1"}, false},
		{`component is not EMPTY AND NOT project = C`, []string{"A-1", "A-2", "A-3"}, false},
		{`labels not in (x, y)`, nil, false}, // A-2 has no labels: not in never matches it
		{`issuekey = a-2 OR key in ("B-1")`, []string{"A-2", "B-1"}, false},
		{`ORDER BY key DESC`, []string{"A-1", "A-2", "B-1", "C-1", "A-3"}, true},
	} {
		q, err := parseJQL(tc.jql)
		if err != nil {
			t.Errorf("parseJQL(%q): %v", tc.jql, err)
			continue
		}
		var got []string
		for _, sn := range all {
			if q.matches(sn) {
				got = append(got, jiraKey(sn))
			}
		}
		if !slices.Equal(got, tc.want) || q.descending != tc.desc {
			t.Errorf("%s matched %v (descending %v), want %v (%v)", tc.jql, got, q.descending, tc.want, tc.desc)
		}
	}
	for _, bad := range []string{"project", `project ~ "A"`, `project = "A" ORDER BY key ASC extra`,
		`project = "A" AND statusCategory != "In Progress"`, `assignee = bob`, `(project = A`, `project in (A,`,
		`project = A AND`, `project in A`, strings.Repeat("(", 40) + "project = A" + strings.Repeat(")", 40)} {
		if _, err := parseJQL(bad); err == nil {
			t.Errorf("parseJQL(%q) accepted", bad)
		}
	}
	q, _ := parseJQL(`project in (A, B) AND (component = X OR project = C)`)
	if keys, ok := q.onlyProjects(); !ok || !slices.Equal(keys, []string{"A", "B"}) || !slices.Equal(q.projects(), []string{"A", "B", "C"}) {
		t.Errorf("onlyProjects = %v, %v; projects = %v", keys, ok, q.projects())
	}
	if q, _ := parseJQL(`project = A OR component = X`); q.where != nil {
		if _, ok := q.onlyProjects(); ok {
			t.Error("an OR of a project clause pinned the projects")
		}
	}
}

// FuzzParseJQL: any query parses or is refused, never panics, and a parsed
// one evaluates.
func FuzzParseJQL(f *testing.F) {
	for _, s := range []string{`project in (A, B) AND component = X`, `NOT (labels = "a" OR key = A-1) ORDER BY key DESC`, `component is not EMPTY`, `((((`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if parsed, err := parseJQL(q); err == nil {
			parsed.matches(snapshot{repo: "A", number: 1, open: true})
			parsed.projects()
			parsed.onlyProjects()
		}
	})
}

// An admin webhook with a JQL filter is sent only the events of issues the
// filter selects as the change left them: an issue of another component,
// then that issue once its component joins.
func TestJiraWebhookJQLFilter(t *testing.T) {
	t.Parallel()
	s, _ := startJira(t)
	var mu sync.Mutex
	var keys []string
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p struct {
			Issue struct {
				Key string `json:"key"`
			} `json:"issue"`
		}
		_ = json.NewDecoder(r.Body).Decode(&p)
		mu.Lock()
		keys = append(keys, p.Issue.Key)
		mu.Unlock()
	}))
	t.Cleanup(rcv.Close)
	s.CreateRepo("PAY")
	s.CreateRepo("OPS")
	s.AddHook(Hook{URL: rcv.URL, Secret: "s", Dialect: "jira", JQL: "project in (PAY, OPS) AND component = Payments"})
	pay := s.CreateIssue("PAY", "t", "") // no component yet: not sent
	if err := s.SetComponents("PAY", pay, "Payments"); err != nil {
		t.Fatal(err)
	}
	s.CreateIssue("OTHER", "t", "")
	if err := s.SetComponents("OTHER", 1, "Payments"); err != nil {
		t.Fatal(err)
	}
	ops := s.CreateIssue("OPS", "t", "")
	if err := s.SetComponents("OPS", ops, "Search"); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(keys, []string{"PAY-1"}) {
		t.Errorf("deliveries for %v, want PAY-1 once (its component change)", keys)
	}
}
