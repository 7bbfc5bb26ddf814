package azuredevops

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
)

func TestFormatParseID(t *testing.T) {
	id := FormatID("contoso/shop front", 12)
	if id != "contoso/shop front#12" {
		t.Fatalf("FormatID = %q", id)
	}
	repo, n, err := ParseID(id)
	if err != nil || repo != "contoso/shop front" || n != 12 {
		t.Fatalf("ParseID(%q) = %q, %d, %v", id, repo, n, err)
	}
	for _, bad := range []string{"", "#1", "org#1", "org/proj", "org/proj#", "org/proj#0", "org/proj#-2", "org/proj#x", "/proj#1", "org/#1", "a/b/c#1"} {
		if _, _, err := ParseID(bad); err == nil {
			t.Errorf("ParseID(%q) accepted", bad)
		}
	}
}

func TestNew(t *testing.T) {
	for _, repo := range []string{"", "org", "org/", "/proj", "a/b/c", "o#/p"} {
		if _, err := New(Options{Repo: repo}); err == nil {
			t.Errorf("New(Repo %q) accepted", repo)
		}
	}
	if _, err := New(Options{Repo: "o/p", BaseURL: "ftp://x/"}); err == nil {
		t.Errorf("New accepted an ftp base URL")
	}
	tr, err := New(Options{Repo: "Contoso/Shop Front"})
	if err != nil || tr.Locator() != "contoso/shop front" || tr.orgURL != "https://dev.azure.com/Contoso" {
		t.Fatalf("New: %v, locator %q, org URL %q", err, tr.Locator(), tr.orgURL)
	}
}

func TestRelabelTags(t *testing.T) {
	cases := []struct {
		tags, remove []string
		add          []string
		want         []string
	}{
		{[]string{"bug", "agent-smith:pending", "zeta"}, []string{"agent-smith:pending"}, []string{"agent-smith:enqueued"}, []string{"bug", "zeta", "agent-smith:enqueued"}},
		// Azure DevOps tags are case-insensitive: every spelling goes.
		{[]string{"Agent-Smith:Pending", "bug"}, []string{"agent-smith:pending"}, nil, []string{"bug"}},
		// A spelling of add is replaced in place, never duplicated.
		{[]string{"Bug", "x"}, nil, []string{"bug"}, []string{"bug", "x"}},
		{[]string{"bug", "bug"}, nil, []string{"bug"}, []string{"bug"}},
		{[]string{"日本語", "other-prefix:enqueued"}, []string{"agent-smith:enqueued"}, nil, []string{"日本語", "other-prefix:enqueued"}},
		// Several tags move in one list; one in remove and add stays.
		{[]string{"a", "agent-smith:in-progress", "agent-smith:stage/plan", "Agent-Smith:Stage/Test"},
			[]string{"agent-smith:in-progress", "agent-smith:stage/plan", "agent-smith:stage/test"},
			[]string{"agent-smith:enqueued", "agent-smith:stage/test"},
			[]string{"a", "agent-smith:stage/test", "agent-smith:enqueued"}},
	}
	for _, c := range cases {
		if got := relabel(c.tags, c.remove, c.add); !slices.Equal(got, c.want) {
			t.Errorf("relabel(%q, %q, %q) = %q, want %q", c.tags, c.remove, c.add, got, c.want)
		}
	}
	if got := splitTags(" a;b ;  c d ;;"); !slices.Equal(got, []string{"a", "b", "c d"}) {
		t.Errorf("splitTags = %q", got)
	}
	if got := splitTags(""); got == nil || len(got) != 0 {
		t.Errorf("splitTags(\"\") = %#v, want empty non-nil", got)
	}
	if joinTags([]string{"a", "b c"}) != "a; b c" {
		t.Errorf("joinTags")
	}
	for _, bad := range []string{"a;b", " a", "a "} {
		if checkTag(bad) == nil {
			t.Errorf("checkTag(%q) accepted", bad)
		}
	}
}

func TestListQuery(t *testing.T) {
	got := ListQuery("it's")
	want := "SELECT [System.Id] FROM WorkItems WHERE [System.TeamProject] = @project AND [System.Tags] CONTAINS 'it''s'" +
		" AND [System.State] NOT IN ('Closed', 'Done', 'Removed', 'Resolved') ORDER BY [System.Id]"
	if got != want {
		t.Fatalf("ListQuery =\n%s\nwant\n%s", got, want)
	}
}

// fake is a minimal Azure DevOps Server: no resource areas (so the org URL
// serves everything), the locations the SDK needs, and a work item endpoint
// whose answer a test chooses.
type fake struct {
	mu      sync.Mutex
	answer  func(w http.ResponseWriter, r *http.Request)
	methods []string
}

func newFake(t *testing.T) (*fake, *httptest.Server) {
	f := &fake{}
	mux := http.NewServeMux()
	mux.HandleFunc("OPTIONS /tfs/{org}/_apis", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		locs := []map[string]any{
			{"id": "e81700f7-3be2-46de-8624-2eb35882fcaa", "area": "Location", "resourceName": "ResourceAreas", "routeTemplate": "_apis/{resource}/{areaId}", "resourceVersion": 1, "minVersion": "3.2", "maxVersion": "7.2", "releasedVersion": "0.0"},
			{"id": "72c7ddf8-2cdc-4f60-90cd-ab71c14a399b", "area": "wit", "resourceName": "workitems", "routeTemplate": "{project}/_apis/{area}/{resource}/{id}", "resourceVersion": 3, "minVersion": "1.0", "maxVersion": "7.2", "releasedVersion": "7.1"},
		}
		writeJSON(w, http.StatusOK, map[string]any{"count": len(locs), "value": locs})
	})
	mux.HandleFunc("GET /tfs/{org}/_apis/ResourceAreas", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		writeJSON(w, http.StatusOK, map[string]any{"count": 0, "value": []any{}})
	})
	mux.HandleFunc("/tfs/{org}/{project}/_apis/wit/workitems/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		f.mu.Lock()
		a := f.answer
		f.mu.Unlock()
		a(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fake) record(r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.methods = append(f.methods, r.Method+" "+r.URL.Path)
}

func (f *fake) set(a func(w http.ResponseWriter, r *http.Request)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answer = a
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func TestAgainstServer(t *testing.T) {
	f, srv := newFake(t)
	tr, err := New(Options{BaseURL: srv.URL + "/tfs/", Repo: "DefaultCollection/Shop", Project: "shop", Token: "pat"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ref := platforms.Ref{Platform: Platform, ID: "defaultcollection/shop#7"}

	var auth string
	f.set(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		writeJSON(w, http.StatusOK, map[string]any{"id": 7, "rev": 4, "fields": map[string]any{
			"System.Title": "T", "System.State": "Resolved", "System.Tags": "b; a", "System.TeamProject": "Shop"}})
	})
	tk, err := tr.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Version != "4" || tk.Open || !slices.Equal(tk.Labels, []string{"b", "a"}) || tk.Ref.Project != "shop" ||
		tk.URL != srv.URL+"/tfs/DefaultCollection/Shop/_workitems/edit/7" {
		t.Fatalf("Get = %+v", tk)
	}
	if auth != BasicAuth("", "pat") {
		t.Errorf("Authorization = %q, want basic auth with the PAT as password", auth)
	}
	if !slices.Contains(f.methods, "GET /tfs/DefaultCollection/_apis/ResourceAreas") {
		t.Errorf("no resource area discovery in %q", f.methods)
	}

	// Another project's work item is not this tracker's ticket.
	f.set(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"id": 7, "rev": 1, "fields": map[string]any{"System.TeamProject": "Other"}})
	})
	if _, err := tr.Get(ctx, ref); !errors.Is(err, platforms.ErrNotFound) {
		t.Errorf("Get of another project's item: %v, want ErrNotFound", err)
	}

	// The patch document tests /rev first, then replaces the tags with the
	// whole computed list ("add" would merge and keep A).
	var doc []map[string]any
	var ctype string
	f.set(func(w http.ResponseWriter, r *http.Request) {
		ctype = r.Header.Get("Content-Type")
		_ = json.NewDecoder(r.Body).Decode(&doc)
		writeJSON(w, http.StatusOK, map[string]any{"id": 7, "rev": 5, "fields": map[string]any{"System.Tags": "b; agent-smith:done"}})
	})
	tk.Version = "4"
	out, err := tr.Relabel(ctx, tk, []string{"A"}, "agent-smith:done")
	if err != nil {
		t.Fatal(err)
	}
	if out.Version != "5" || !strings.HasPrefix(ctype, "application/json-patch+json") || len(doc) != 2 ||
		doc[0]["op"] != "test" || doc[0]["path"] != "/rev" || doc[0]["value"] != float64(4) ||
		doc[1]["op"] != "replace" || doc[1]["path"] != "/fields/System.Tags" || doc[1]["value"] != "b; agent-smith:done" {
		t.Fatalf("Relabel sent %s %v, returned %+v", ctype, doc, out)
	}

	// A work item without tags gets "add": "replace" of an empty field
	// fails on the service, and the tested rev proves there is nothing to
	// merge with.
	f.set(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&doc)
		writeJSON(w, http.StatusOK, map[string]any{"id": 7, "rev": 5, "fields": map[string]any{"System.Tags": "agent-smith:pending"}})
	})
	bare := *tk
	bare.Labels = []string{}
	if _, err := tr.Relabel(ctx, &bare, nil, "agent-smith:pending"); err != nil || len(doc) != 2 || doc[1]["op"] != "add" || doc[1]["value"] != "agent-smith:pending" {
		t.Fatalf("Relabel of an untagged item sent %v: %v", doc, err)
	}

	// The answer is checked: tags other than those written (the service
	// merged instead of replacing, or merged another writer's change) or a
	// revision that is not newer is a conflict to re-read after.
	for _, answer := range []map[string]any{
		{"id": 7, "rev": 5, "fields": map[string]any{"System.Tags": "b; A; agent-smith:done"}},
		{"id": 7, "rev": 5, "fields": map[string]any{"System.Tags": "b"}},
		{"id": 7, "rev": 4, "fields": map[string]any{"System.Tags": "b; agent-smith:done"}},
	} {
		f.set(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, answer) })
		if out, err := tr.Relabel(ctx, tk, []string{"A"}, "agent-smith:done"); !errors.Is(err, platforms.ErrPreconditionFailed) {
			t.Errorf("answer %v: Relabel = %+v, %v, want ErrPreconditionFailed", answer, out, err)
		}
	}
	// The catalogue's spelling of a tag is the tag.
	f.set(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"id": 7, "rev": 5, "fields": map[string]any{"System.Tags": "B; Agent-Smith:Done"}})
	})
	if _, err := tr.Relabel(ctx, tk, []string{"A"}, "agent-smith:done"); err != nil {
		t.Errorf("answer in the catalogue's spelling: %v", err)
	}

	// Nothing to change: no request, the ticket as it is.
	f.mu.Lock()
	sent := len(f.methods)
	f.mu.Unlock()
	same, err := tr.Relabel(ctx, tk, []string{"agent-smith:failed"}, "b")
	f.mu.Lock()
	after := len(f.methods)
	f.mu.Unlock()
	if err != nil || after != sent || same.Version != tk.Version || !slices.Equal(same.Labels, tk.Labels) {
		t.Errorf("no-op Relabel: %+v, %v, requests %d → %d", same, err, sent, after)
	}

	// Status codes: 412 and 409 are a lost race, 404 not found, and a
	// proxy's HTML error page keeps its status.
	for _, c := range []struct {
		code        int
		contentType string
		want        error
	}{
		{http.StatusPreconditionFailed, "application/json", platforms.ErrPreconditionFailed},
		{http.StatusConflict, "application/json", platforms.ErrPreconditionFailed},
		{http.StatusPreconditionFailed, "text/html", platforms.ErrPreconditionFailed},
		{http.StatusNotFound, "text/html", platforms.ErrNotFound},
	} {
		f.set(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", c.contentType)
			w.Header().Set("X-TFS-Session", "11111111-2222-3333-4444-555555555555")
			w.WriteHeader(c.code)
			if strings.Contains(c.contentType, "json") {
				_, _ = w.Write([]byte(`{"$id":"1","message":"TF26071: changed by someone else","typeKey":"X"}`))
			} else {
				_, _ = w.Write([]byte("<html>nope</html>"))
			}
		})
		_, err := tr.Relabel(ctx, tk, nil, "x")
		if !errors.Is(err, c.want) {
			t.Errorf("%d %s: err = %v, want %v", c.code, c.contentType, err, c.want)
		}
	}

	tk.Version = ""
	if _, err := tr.Relabel(ctx, tk, nil, "x"); err == nil || !strings.Contains(err.Error(), "no revision") {
		t.Errorf("Relabel without a version: %v", err)
	}
	tk.Version = "4"
	if _, err := tr.Relabel(ctx, tk, nil, "a;b"); err == nil {
		t.Errorf("Relabel accepted a tag with ';'")
	}
	for _, bad := range []platforms.Ref{
		{Platform: "github", ID: "defaultcollection/shop#7"},
		{Platform: Platform, ID: "other/shop#7"},
		{Platform: Platform, ID: "garbage"},
	} {
		if _, err := tr.Get(ctx, bad); err == nil {
			t.Errorf("Get(%+v) accepted", bad)
		}
	}
}

// TestSpellings: a tag of ours in the project's other spelling is read as
// ours, in a Get and in Relabel's answer (the catalogue keeps the first
// spelling, so a write of ours can come back as "Agent-Smith:Done").
func TestSpellings(t *testing.T) {
	f, srv := newFake(t)
	tr, err := New(Options{BaseURL: srv.URL + "/tfs/", Repo: "C/Shop", Token: "pat",
		Spellings: []string{"agent-smith", "agent-smith:in-progress", "agent-smith:done"}})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := New(Options{BaseURL: srv.URL + "/tfs/", Repo: "C/Shop", Token: "pat"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ref := platforms.Ref{Platform: Platform, ID: "c/shop#7"}
	f.set(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPatch {
			writeJSON(w, http.StatusOK, map[string]any{"id": 7, "rev": 5, "fields": map[string]any{"System.Tags": "Agent-Smith; bug; agent-smith:in-progress-x; Agent-Smith:Done"}})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": 7, "rev": 4, "fields": map[string]any{"System.Tags": "Agent-Smith; bug; AGENT-SMITH:IN-PROGRESS; agent-smith:in-progress-x"}})
	})
	tk, err := tr.Get(ctx, ref)
	if err != nil || !slices.Equal(tk.Labels, []string{"agent-smith", "bug", "agent-smith:in-progress", "agent-smith:in-progress-x"}) {
		t.Fatalf("Get = %+v, %v", tk, err)
	}
	if raw, err := plain.Get(ctx, ref); err != nil || !slices.Equal(raw.Labels, []string{"Agent-Smith", "bug", "AGENT-SMITH:IN-PROGRESS", "agent-smith:in-progress-x"}) {
		t.Fatalf("Get without spellings = %+v, %v", raw, err)
	}
	done, err := tr.Relabel(ctx, tk, []string{"agent-smith:in-progress"}, "agent-smith:done")
	if err != nil || done.Version != "5" || !slices.Equal(done.Labels, []string{"agent-smith", "bug", "agent-smith:in-progress-x", "agent-smith:done"}) {
		t.Fatalf("Relabel = %+v, %v", done, err)
	}
}
