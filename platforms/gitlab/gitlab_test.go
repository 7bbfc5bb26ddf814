package gitlab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
)

const repo = "acme/platform/payments-api"

func ref(n int) platforms.Ref { return platforms.Ref{Platform: Platform, ID: FormatID(repo, n)} }

func TestFormatParseID(t *testing.T) {
	id := FormatID(repo, 12)
	if id != "acme/platform/payments-api#12" {
		t.Fatalf("FormatID = %q", id)
	}
	r, n, err := ParseID(id)
	if err != nil || r != repo || n != 12 {
		t.Fatalf("ParseID(%q) = %q, %d, %v", id, r, n, err)
	}
	for _, bad := range []string{"", "#1", "acme#1", "acme/api", "acme/api#", "acme/api#0", "acme/api#-1",
		"acme/api#x", "/api#1", "acme/#1", "acme//api#1", "acme/api/#1", " acme/api#1"} {
		if _, _, err := ParseID(bad); err == nil {
			t.Errorf("ParseID(%q) accepted", bad)
		}
	}
}

func TestNew(t *testing.T) {
	for _, r := range []string{"", "acme", "acme/", "/api", "a//b", "a/b#c"} {
		if _, err := New(Options{Repo: r}); err == nil {
			t.Errorf("New(Repo %q) accepted", r)
		}
	}
	tr, err := New(Options{Repo: repo})
	if err != nil || tr.Locator() != repo || tr.api.baseURL() != DefaultBaseURL {
		t.Fatalf("New: %v, locator %q base %q", err, tr.Locator(), tr.api.baseURL())
	}
	// Self-managed: the instance URL or its API root, with or without a slash.
	for _, base := range []string{"https://git.example.com", "https://git.example.com/", "https://git.example.com/api/v4",
		"https://git.example.com/api/v4/"} {
		tr, err := New(Options{Repo: repo, BaseURL: base})
		if err != nil || tr.api.baseURL() != "https://git.example.com/api/v4/" {
			t.Errorf("BaseURL %q: %v, resolved %q", base, err, tr.api.baseURL())
		}
	}
}

// fake is a minimal GitLab: one project, issues by iid, and a hook that
// runs between reading and answering a PUT so a test can play the other
// writer.
type fake struct {
	mu      sync.Mutex
	labels  map[int][]string
	notes   map[int][]string
	onPut   func(iid int) // called under mu after the PUT's change
	puts    []putBody
	auth    []string
	listReq []string
}

type putBody struct{ add, remove string }

func newFake(t *testing.T) (*fake, *Tracker) {
	t.Helper()
	f := &fake{labels: map[int][]string{}, notes: map[int][]string{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	tr, err := New(Options{BaseURL: srv.URL, Repo: repo, Project: "proj", Token: "glpat-secret", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return f, tr
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	prefix := "/api/v4/projects/" + strings.ReplaceAll(repo, "/", "%2F") + "/issues"
	path := r.URL.EscapedPath()
	if !strings.HasPrefix(path, prefix) {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"message":"404 Project Not Found"}`))
		return
	}
	rest := strings.TrimPrefix(path, prefix)
	if rest == "" && r.Method == http.MethodGet {
		f.list(w, r)
		return
	}
	iidStr, sub, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
	iid, _ := strconv.Atoi(iidStr)
	labels, ok := f.labels[iid]
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"message":"404 Issue Not Found"}`))
		return
	}
	switch {
	case sub == "notes" && r.Method == http.MethodPost:
		var b struct{ Body string }
		_ = json.NewDecoder(r.Body).Decode(&b)
		f.notes[iid] = append(f.notes[iid], b.Body)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":1,"body":"x"}`))
		return
	case sub == "" && r.Method == http.MethodPut:
		var b struct {
			Add    string `json:"add_labels"`
			Remove string `json:"remove_labels"`
		}
		_ = json.NewDecoder(r.Body).Decode(&b)
		f.puts = append(f.puts, putBody{b.Add, b.Remove})
		rm := strings.Split(b.Remove, ",")
		labels = slices.DeleteFunc(slices.Clone(labels), func(l string) bool { return slices.Contains(rm, l) })
		for _, a := range strings.Split(b.Add, ",") {
			if a != "" && !slices.Contains(labels, a) {
				labels = append(labels, a)
			}
		}
		f.labels[iid] = labels
		if f.onPut != nil {
			f.onPut(iid)
		}
	case sub == "" && r.Method == http.MethodGet:
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	writeIssue(w, iid, f.labels[iid])
}

func issueJSON(iid int, labels []string) map[string]any {
	sorted := slices.Sorted(slices.Values(labels))
	return map[string]any{"id": 1000 + iid, "iid": iid, "title": fmt.Sprintf("Issue %d", iid), "description": "d",
		"state": "opened", "labels": sorted, "web_url": fmt.Sprintf("https://git.example.com/%s/-/issues/%d", repo, iid)}
}

func writeIssue(w http.ResponseWriter, iid int, labels []string) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(issueJSON(iid, labels))
}

// list serves two issues per page, advertising the next page only through
// X-Next-Page (as GitLab does when it omits X-Total for large collections).
func (f *fake) list(w http.ResponseWriter, r *http.Request) {
	f.listReq = append(f.listReq, r.URL.RawQuery)
	q := r.URL.Query()
	var ids []int
	for iid, ls := range f.labels {
		if slices.Contains(ls, q.Get("labels")) {
			ids = append(ids, iid)
		}
	}
	slices.Sort(ids)
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	lo := min((page-1)*2, len(ids))
	hi := min(lo+2, len(ids))
	out := []map[string]any{}
	for _, iid := range ids[lo:hi] {
		out = append(out, issueJSON(iid, f.labels[iid]))
	}
	w.Header().Set("X-Page", strconv.Itoa(page))
	if hi < len(ids) {
		w.Header().Set("X-Next-Page", strconv.Itoa(page+1))
	} else {
		w.Header().Set("X-Next-Page", "")
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func TestGet(t *testing.T) {
	f, tr := newFake(t)
	f.labels[3] = []string{"bug", "agent-smith:pending"}
	tk, err := tr.Get(context.Background(), ref(3))
	if err != nil {
		t.Fatal(err)
	}
	want := platforms.Ref{Platform: Platform, Project: "proj", ID: repo + "#3"}
	if tk.Ref != want || tk.Title != "Issue 3" || !tk.Open || tk.Version != "" || tk.Body != "d" ||
		!slices.Equal(tk.Labels, []string{"agent-smith:pending", "bug"}) || !strings.HasSuffix(tk.URL, "/-/issues/3") {
		t.Fatalf("Get = %+v", tk)
	}
	if got := f.auth[0]; got != "Bearer glpat-secret" {
		t.Fatalf("Authorization = %q", got)
	}
	if _, err := tr.Get(context.Background(), ref(9)); !errors.Is(err, platforms.ErrNotFound) {
		t.Fatalf("missing issue err = %v", err)
	}
	other := platforms.Ref{Platform: Platform, ID: "acme/other#3"}
	if _, err := tr.Get(context.Background(), other); err == nil {
		t.Fatalf("Get accepted another project's ref")
	}
	// Paths are case-insensitive on GitLab.
	if _, err := tr.Get(context.Background(), platforms.Ref{Platform: Platform, ID: "ACME/Platform/payments-api#3"}); err != nil {
		t.Fatalf("Get with other case: %v", err)
	}
}

func TestRelabelNamesOnlyItsLabels(t *testing.T) {
	f, tr := newFake(t)
	f.labels[1] = []string{"zeta", "agent-smith:pending", "bug"}
	tk, err := tr.Get(context.Background(), ref(1))
	if err != nil {
		t.Fatal(err)
	}
	got, err := tr.Relabel(context.Background(), tk, []string{"agent-smith:pending"}, "agent-smith:enqueued")
	if err != nil {
		t.Fatal(err)
	}
	if want := (putBody{add: "agent-smith:enqueued", remove: "agent-smith:pending"}); len(f.puts) != 1 || f.puts[0] != want {
		t.Fatalf("PUT bodies = %+v, want %+v", f.puts, want)
	}
	// Snapshot order kept (GitLab's is by title), the added label last.
	if want := []string{"bug", "zeta", "agent-smith:enqueued"}; !slices.Equal(got.Labels, want) {
		t.Fatalf("labels = %q, want %q", got.Labels, want)
	}
	// Removing and adding nothing of ours still is a valid write.
	if _, err := tr.Relabel(context.Background(), got, []string{"agent-smith:enqueued"}, ""); err != nil {
		t.Fatal(err)
	}
	if want := (putBody{remove: "agent-smith:enqueued"}); f.puts[1] != want {
		t.Fatalf("PUT = %+v, want %+v", f.puts[1], want)
	}
}

func TestRelabelDetectsLostRace(t *testing.T) {
	for _, c := range []struct {
		name  string
		other func(ls []string) []string
		lost  bool
	}{
		{"alone", func(ls []string) []string { return ls }, false},
		{"foreign non-lifecycle label", func(ls []string) []string { return append(ls, "needs-review") }, false},
		{"lookalike label", func(ls []string) []string { return append(ls, "agent-smith-x:done", "Agent-Smith:done") }, false},
		{"another claim", func(ls []string) []string { return append(ls, "agent-smith:in-progress") }, true},
		// A person removing any label outside the lifecycle, the trigger
		// included, is their edit and kept, not a lost race (removing the
		// trigger cancels through the receiver and the CancelDetector).
		{"trigger removed", func(ls []string) []string {
			return slices.DeleteFunc(ls, func(l string) bool { return l == "agent-smith" })
		}, false},
		{"our label removed", func(ls []string) []string {
			return slices.DeleteFunc(ls, func(l string) bool { return l == "agent-smith:enqueued" })
		}, true},
		{"removed label re-added", func(ls []string) []string { return append(ls, "agent-smith:pending") }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, tr := newFake(t)
			f.labels[1] = []string{"agent-smith", "agent-smith:pending"}
			tk, err := tr.Get(context.Background(), ref(1))
			if err != nil {
				t.Fatal(err)
			}
			f.onPut = func(iid int) { f.labels[iid] = c.other(f.labels[iid]) }
			_, err = tr.Relabel(context.Background(), tk, []string{"agent-smith:pending"}, "agent-smith:enqueued")
			if lost := errors.Is(err, platforms.ErrPreconditionFailed); lost != c.lost || (!c.lost && err != nil) {
				t.Fatalf("err = %v, want lost=%v", err, c.lost)
			}
		})
	}
}

func TestCommentAndErrors(t *testing.T) {
	f, tr := newFake(t)
	f.labels[2] = nil
	if err := tr.Comment(context.Background(), ref(2), "pipeline failed: **boom**"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.notes[2], []string{"pipeline failed: **boom**"}) {
		t.Fatalf("notes = %q", f.notes[2])
	}
	if err := tr.Comment(context.Background(), ref(5), "x"); !errors.Is(err, platforms.ErrNotFound) {
		t.Fatalf("comment on missing issue err = %v", err)
	}
	if err := tr.Comment(context.Background(), platforms.Ref{Platform: "github", ID: repo + "#2"}, "x"); err == nil {
		t.Fatalf("comment accepted a github ref")
	}
}

func TestListOpenFollowsNextPage(t *testing.T) {
	f, tr := newFake(t)
	for i := 1; i <= 5; i++ {
		f.labels[i] = []string{"agent-smith"}
	}
	f.labels[6] = []string{"bug"}
	got, err := tr.ListOpen(context.Background(), "agent-smith")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tk := range got {
		ids = append(ids, tk.Ref.ID)
	}
	if len(ids) != 5 || len(f.listReq) != 3 {
		t.Fatalf("listed %q in %d requests", ids, len(f.listReq))
	}
	for _, q := range f.listReq {
		if !strings.Contains(q, "state=opened") || !strings.Contains(q, "labels=agent-smith") || !strings.Contains(q, "per_page=100") {
			t.Fatalf("list query %q", q)
		}
	}
}

func TestRelabelNothingToWriteReads(t *testing.T) {
	f, tr := newFake(t)
	f.labels[1] = []string{"bug"}
	tk, err := tr.Get(context.Background(), ref(1))
	if err != nil {
		t.Fatal(err)
	}
	got, err := tr.Relabel(context.Background(), tk, nil, "")
	if err != nil || len(f.puts) != 0 || !slices.Equal(got.Labels, []string{"bug"}) {
		t.Fatalf("Relabel(nil, \"\") = %+v, %v; puts %d", got, err, len(f.puts))
	}
}
