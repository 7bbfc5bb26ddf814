package trackersim

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/azuredevops"
)

const adoTestPAT = "ado-pat"

func newADOSim(t *testing.T) (*Sim, *httptest.Server) {
	t.Helper()
	s := New(Options{Tokens: []string{adoTestPAT}})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv
}

// adoDo sends one request with the PAT and the api-version the SDK sends.
func adoDo(t *testing.T, method, url, contentType, body string) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(":"+adoTestPAT)))
	req.Header.Set("Accept", "application/json;api-version=7.1-preview.3")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &out)
	return resp, out
}

func TestADOWorkItemRevAndPatch(t *testing.T) {
	t.Parallel()
	s, srv := newADOSim(t)
	n := s.CreateIssue("Org/Proj", "first", "body", "b", "a")
	item := srv.URL + "/ado/org/PROJ/_apis/wit/workItems/1"

	resp, wi := adoDo(t, "GET", item, "", "")
	f, _ := wi["fields"].(map[string]any)
	if resp.StatusCode != 200 || n != 1 || wi["rev"] != float64(1) || f["System.Tags"] != "b; a" || f["System.State"] != "To Do" {
		t.Fatalf("GET = %d %v", resp.StatusCode, wi)
	}

	patch := `[{"op":"test","path":"/rev","value":1},{"op":"add","path":"/fields/System.Tags","value":"a; B; b; x"}]`
	if resp, _ := adoDo(t, "PATCH", item, "application/json", patch); resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("PATCH as application/json = %d, want 415", resp.StatusCode)
	}
	resp, wi = adoDo(t, "PATCH", item, "application/json-patch+json", patch)
	f, _ = wi["fields"].(map[string]any)
	// "add" merges: only x is new; "B" is b, spelled as the item spells it.
	if resp.StatusCode != 200 || wi["rev"] != float64(2) || f["System.Tags"] != "b; a; x" {
		t.Fatalf("PATCH = %d %v", resp.StatusCode, wi)
	}
	// The same document again tests a stale rev: 412 with the service's
	// body, nothing written.
	resp, e := adoDo(t, "PATCH", item, "application/json-patch+json", patch)
	if resp.StatusCode != http.StatusPreconditionFailed || e["typeKey"] != "TestPatchOperationFailedException" ||
		e["message"] != "VS403351: Test Operation for path /rev failed, value 2 was not equal to test value 1." {
		t.Fatalf("stale PATCH = %d %v", resp.StatusCode, e)
	}
	if is, _ := s.Issue("Org/Proj", 1); !slices.Equal(is.Labels, []string{"b", "a", "x"}) {
		t.Errorf("labels after refused write = %q", is.Labels)
	}
	// Closing through System.State, then a comment: each is one rev.
	resp, wi = adoDo(t, "PATCH", item, "application/json-patch+json", `[{"op":"replace","path":"/fields/System.State","value":"Closed"}]`)
	if resp.StatusCode != 200 || wi["rev"] != float64(3) {
		t.Fatalf("close = %d %v", resp.StatusCode, wi)
	}
	resp, c := adoDo(t, "POST", item+"/comments?format=markdown", "application/json", `{"text":"hi **there**"}`)
	if resp.StatusCode != 200 || c["text"] != "hi **there**" || c["format"] != "markdown" {
		t.Fatalf("comment = %d %v", resp.StatusCode, c)
	}
	if _, wi = adoDo(t, "GET", item, "", ""); wi["rev"] != float64(4) || wi["fields"].(map[string]any)["System.State"] != "Done" {
		t.Errorf("after close and comment: %v", wi)
	}

	for _, bad := range []string{
		`[{"op":"test","path":"/fields/System.Title","value":"x"}]`,
		`[{"op":"add","path":"/fields/System.AssignedTo","value":"x"}]`,
		`[{"op":"move","path":"/fields/System.Tags","from":"/x"}]`,
		`{}`,
	} {
		if resp, _ := adoDo(t, "PATCH", item, "application/json-patch+json", bad); resp.StatusCode != 400 {
			t.Errorf("PATCH %s = %d, want 400", bad, resp.StatusCode)
		}
	}
	if resp, _ := adoDo(t, "GET", srv.URL+"/ado/org/nope/_apis/wit/workItems/1", "", ""); resp.StatusCode != 404 {
		t.Errorf("unknown project = %d", resp.StatusCode)
	}
	if resp, _ := adoDo(t, "GET", srv.URL+"/ado/org/proj/_apis/wit/workitems/9", "", ""); resp.StatusCode != 404 {
		t.Errorf("unknown work item (lower-case route) = %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", item, nil)
	req.Header.Set("Accept", "application/json;api-version=7.1")
	if resp, err := testClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Errorf("no PAT: %v %v", resp.StatusCode, err)
	}
}

func TestADOWiqlAndBatch(t *testing.T) {
	t.Parallel()
	s, srv := newADOSim(t)
	s.CreateIssue("o/p", "one", "", "agent-smith:pending")
	s.CreateIssue("o/p", "two", "", "Agent-Smith:Pending", "x")
	s.CreateIssue("o/p", "three", "", "agent-smith:pending-not")
	s.CreateIssue("o/p", "four", "", "agent-smith:pending")
	_ = s.SetOpen("o/p", 4, false)
	s.CreateIssue("o/q", "other project", "", "agent-smith:pending")
	wiql := srv.URL + "/ado/o/p/_apis/wit/wiql"

	body, _ := json.Marshal(map[string]string{"query": azuredevops.ListQuery("agent-smith:pending")})
	resp, res := adoDo(t, "POST", wiql, "application/json", string(body))
	if resp.StatusCode != 200 {
		t.Fatalf("wiql = %d %v", resp.StatusCode, res)
	}
	var ids []float64
	for _, r := range res["workItems"].([]any) {
		ids = append(ids, r.(map[string]any)["id"].(float64))
	}
	// CONTAINS matches whole tags, case-insensitively.
	if !slices.Equal(ids, []float64{1, 2}) {
		t.Errorf("ids = %v, want [1 2]", ids)
	}
	for _, q := range []string{
		"SELECT [System.Id] FROM WorkItemLinks",
		"SELECT [System.Id] FROM WorkItems WHERE [System.AssignedTo] = @me",
		"SELECT [System.Id] FROM WorkItems WHERE [System.Tags] CONTAINS 'a' OR [System.Tags] CONTAINS 'b'",
		"SELECT [System.Id] FROM WorkItems WHERE [System.Tags] CONTAINS 'unterminated",
	} {
		body, _ := json.Marshal(map[string]string{"query": q})
		resp, e := adoDo(t, "POST", wiql, "application/json", string(body))
		if resp.StatusCode != 400 || !strings.Contains(e["message"].(string), "not supported by the sim") {
			t.Errorf("%s = %d %v, want 400", q, resp.StatusCode, e)
		}
	}

	batch := srv.URL + "/ado/o/p/_apis/wit/workItemsBatch"
	resp, res = adoDo(t, "POST", batch, "application/json", `{"ids":[2,99],"fields":["System.Title"],"errorPolicy":"omit"}`)
	vals, _ := res["value"].([]any)
	if resp.StatusCode != 200 || len(vals) != 2 || vals[1] != nil ||
		vals[0].(map[string]any)["fields"].(map[string]any)["System.Title"] != "two" {
		t.Fatalf("batch = %d %v", resp.StatusCode, res)
	}
	if resp, _ := adoDo(t, "POST", batch, "application/json", `{"ids":[2,99]}`); resp.StatusCode != 404 {
		t.Errorf("batch with a missing id and errorPolicy fail = %d", resp.StatusCode)
	}
	many, _ := json.Marshal(map[string]any{"ids": make([]int, adoBatchMax+1)})
	if resp, _ := adoDo(t, "POST", batch, "application/json", string(many)); resp.StatusCode != 400 {
		t.Errorf("batch of %d = %d", adoBatchMax+1, resp.StatusCode)
	}
}

// TestADORace is the claim race through the SDK: one winner, the rest 412.
func TestADORace(t *testing.T) {
	t.Parallel()
	s, srv := newADOSim(t)
	s.CreateIssue("o/race", "race", "", "agent-smith:pending")
	tr, err := azuredevops.New(azuredevops.Options{BaseURL: srv.URL + "/ado/", Repo: "o/race", Token: adoTestPAT})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tk, err := tr.Get(ctx, platforms.Ref{Platform: azuredevops.Platform, ID: "o/race#1"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = tr.Relabel(ctx, tk, []string{"agent-smith:pending"}, "agent-smith:enqueued")
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		if err == nil {
			wins++
		}
	}
	if wins != 1 || len(s.Writes()) != 1 {
		t.Fatalf("wins = %d, writes %v, errs %v", wins, s.Writes(), errs)
	}
}

func TestADOServiceHooks(t *testing.T) {
	t.Parallel()
	s, srv := newADOSim(t)
	type delivery struct {
		h    http.Header
		body []byte
	}
	got := make(chan delivery, 10)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- delivery{r.Header.Clone(), b}
	}))
	t.Cleanup(recv.Close)
	s.CreateRepo("Org/Hooked")
	s.AddHook(Hook{Repo: "Org/Hooked", URL: recv.URL, Secret: "hook-secret", Dialect: "ado"})

	// Learn the base URL the way a client would, so payload links use it.
	if resp, _ := adoDo(t, "GET", srv.URL+"/ado/Org/Hooked/_apis/wit/workItems/1", "", ""); resp.StatusCode != 404 {
		t.Fatalf("GET before create = %d", resp.StatusCode)
	}
	s.CreateIssue("Org/Hooked", "hooked", "", "bug")
	_ = s.AddLabels("Org/Hooked", 1, "agent-smith")

	w := azuredevops.Webhooks{Username: adoBasicUser}
	want := []struct {
		action string
		labels []string
		rev    string
	}{{"created", []string{"bug"}, "1"}, {"updated", []string{"bug", "agent-smith"}, "2"}}
	for _, wnt := range want {
		var d delivery
		select {
		case d = <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s delivery", wnt.action)
		}
		if i, err := w.Verify(d.h, d.body, [][]byte{[]byte("hook-secret")}); err != nil || i != 0 {
			t.Fatalf("Verify: %d, %v", i, err)
		}
		ev, err := w.Parse(d.h, d.body)
		if err != nil || ev.Kind != platforms.EventTicket || ev.Action != wnt.action || ev.Locator != "org/hooked" ||
			ev.Ticket.Ref.ID != "org/hooked#1" || !slices.Equal(ev.Ticket.Labels, wnt.labels) || ev.Ticket.Version != wnt.rev ||
			ev.Ticket.URL != srv.URL+"/ado/Org/Hooked/_workitems/edit/1" {
			t.Fatalf("Parse = %+v (%+v), %v", ev, ev.Ticket, err)
		}
		if ev.DeliveryID == "" {
			t.Errorf("no delivery id")
		}
	}
}

// TestADOTagOperations pins each JSON Patch operation on System.Tags to what
// the service does (ado_tags.go has the sources).
func TestADOTagOperations(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		start []string
		doc   string
		code  int
		want  []string // tags afterwards; nil: unchanged
	}{
		{"add merges", []string{"agent-smith:pending", "bug"}, `[{"op":"add","path":"/fields/System.Tags","value":"agent-smith:enqueued"}]`,
			200, []string{"agent-smith:pending", "bug", "agent-smith:enqueued"}},
		{"add of the whole list keeps what it omits", []string{"agent-smith:enqueued", "bug"}, `[{"op":"add","path":"/fields/System.Tags","value":"bug; agent-smith:in-progress"}]`,
			200, []string{"agent-smith:enqueued", "bug", "agent-smith:in-progress"}},
		{"add folds case and keeps the item's spelling", []string{"Bug"}, `[{"op":"add","path":"/fields/System.Tags","value":"bug; BUG; new"}]`,
			200, []string{"Bug", "new"}},
		{"add of nothing changes nothing", []string{"a"}, `[{"op":"add","path":"/fields/System.Tags","value":""}]`,
			200, []string{"a"}},
		{"add to an item without tags sets them", nil, `[{"op":"add","path":"/fields/System.Tags","value":" a ;b;; "}]`,
			200, []string{"a", "b"}},
		{"replace sets the whole list", []string{"agent-smith:enqueued", "bug"}, `[{"op":"replace","path":"/fields/System.Tags","value":"bug; agent-smith:in-progress"}]`,
			200, []string{"bug", "agent-smith:in-progress"}},
		{"replace keeps the item's spelling", []string{"Bug", "x"}, `[{"op":"replace","path":"/fields/System.Tags","value":"bug"}]`,
			200, []string{"Bug"}},
		{"replace with nothing clears", []string{"a", "b"}, `[{"op":"replace","path":"/fields/System.Tags","value":""}]`,
			200, []string{}},
		{"replace of an item without tags fails", nil, `[{"op":"replace","path":"/fields/System.Tags","value":"a"}]`,
			400, nil},
		{"remove clears", []string{"a", "b"}, `[{"op":"remove","path":"/fields/System.Tags"}]`,
			200, []string{}},
		{"remove of an item without tags fails", nil, `[{"op":"remove","path":"/fields/System.Tags"}]`,
			400, nil},
		{"operations apply in order", []string{"a"}, `[{"op":"replace","path":"/fields/System.Tags","value":"b"},{"op":"add","path":"/fields/System.Tags","value":"c"}]`,
			200, []string{"b", "c"}},
		{"a failed operation writes nothing of the document", []string{"a"}, `[{"op":"replace","path":"/fields/System.Title","value":"changed"},{"op":"remove","path":"/fields/System.Tags"},{"op":"replace","path":"/fields/System.Tags","value":"b"}]`,
			400, nil},
	}
	s, srv := newADOSim(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := s.CreateIssue("o/tags", "item", "", c.start...)
			if n != i+1 {
				t.Fatalf("CreateIssue = %d", n)
			}
			before, _ := s.Issue("o/tags", n)
			resp, body := adoDo(t, "PATCH", srv.URL+"/ado/o/tags/_apis/wit/workItems/"+strconv.Itoa(n), "application/json-patch+json", c.doc)
			after, _ := s.Issue("o/tags", n)
			if resp.StatusCode != c.code {
				t.Fatalf("PATCH = %d %v, want %d", resp.StatusCode, body, c.code)
			}
			if c.want == nil {
				if !slices.Equal(after.Labels, before.Labels) || after.Title != before.Title || after.ETag != before.ETag {
					t.Fatalf("refused document changed the item: %+v, was %+v", after, before)
				}
				if body["typeKey"] != "PatchOperationFailedException" {
					t.Errorf("error body %v", body)
				}
				return
			}
			if !slices.Equal(after.Labels, c.want) {
				t.Fatalf("tags = %q, want %q", after.Labels, c.want)
			}
			// The answer echoes the new tags, joined by "; ".
			f, _ := body["fields"].(map[string]any)
			if got, _ := f["System.Tags"].(string); got != strings.Join(c.want, "; ") {
				t.Errorf("answer System.Tags = %q, want %q", got, strings.Join(c.want, "; "))
			}
		})
	}
}

// A wrong PAT gets what Azure DevOps Services answers it: 203 with an HTML
// sign-in page on GET and POST, 401 TF400813 on PATCH
// (microsoft/azure-devops-auth-samples#52); no PAT at all is 401.
func TestADOWrongPAT(t *testing.T) {
	t.Parallel()
	s, srv := newADOSim(t)
	n := s.CreateIssue("o/p", "one", "", "agent-smith")
	item := srv.URL + "/ado/o/p/_apis/wit/workitems/" + strconv.Itoa(n)
	wiql := srv.URL + "/ado/o/p/_apis/wit/wiql"
	for _, c := range []struct {
		method, url, auth string
		code              int
		html              bool
	}{
		{"GET", item, "wrong", http.StatusNonAuthoritativeInfo, true},
		{"POST", wiql, "wrong", http.StatusNonAuthoritativeInfo, true},
		{"PATCH", item, "wrong", http.StatusUnauthorized, false},
		{"GET", item, "", http.StatusUnauthorized, false},
	} {
		req, _ := http.NewRequest(c.method, c.url+"?api-version=7.1", strings.NewReader(`{"query":"select [System.Id] from WorkItems"}`))
		req.Header.Set("Content-Type", "application/json")
		if c.auth != "" {
			req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(":"+c.auth)))
		}
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if html := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html"); resp.StatusCode != c.code || html != c.html {
			t.Errorf("%s %s with PAT %q = %d %s, want %d (html %v)", c.method, c.url, c.auth, resp.StatusCode, resp.Header.Get("Content-Type"), c.code, c.html)
		}
	}
}
