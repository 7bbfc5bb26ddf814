package jira

import (
	"context"
	"encoding/json"
	"errors"
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
)

// memLocker is an in-process Locker recording what it was asked.
type memLocker struct {
	mu       sync.Mutex
	held     map[string]bool
	err      error
	taken    []string
	ttls     []time.Duration
	unlocked int
}

func (l *memLocker) TryLock(_ context.Context, key string, ttl time.Duration) (func(), bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return nil, false, l.err
	}
	if l.held[key] {
		return nil, false, nil
	}
	if l.held == nil {
		l.held = map[string]bool{}
	}
	l.held[key] = true
	l.taken = append(l.taken, key)
	l.ttls = append(l.ttls, ttl)
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.held, key)
		l.unlocked++
	}, true, nil
}

// request is one request the fake Jira saw.
type request struct {
	method, path, auth string
	query              url.Values
	body               string
}

// fakeJira records requests and answers each with the next queued reply.
type fakeJira struct {
	t       *testing.T
	url     string
	mu      sync.Mutex
	seen    []request
	replies []reply
}

type reply struct {
	code int
	body string
}

func (f *fakeJira) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, request{method: r.Method, path: r.URL.Path, auth: r.Header.Get("Authorization"), query: r.URL.Query(), body: string(b)})
	if len(f.replies) == 0 {
		f.t.Errorf("unexpected request %s %s", r.Method, r.URL)
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	rp := f.replies[0]
	f.replies = f.replies[1:]
	if rp.body != "" {
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	}
	w.WriteHeader(rp.code)
	_, _ = io.WriteString(w, rp.body)
}

func newFake(t *testing.T, deployment, email string, replies ...reply) (*Tracker, *fakeJira, *memLocker) {
	t.Helper()
	f := &fakeJira{t: t, replies: replies}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	l := &memLocker{}
	tr, err := New(Options{BaseURL: srv.URL + "/ctx", Repo: "OPS", Project: "ops", Token: "tok", Email: email,
		Deployment: deployment, HTTPClient: srv.Client(), Locker: l})
	if err != nil {
		t.Fatal(err)
	}
	return tr, f, l
}

const issueJSONv3 = `{"id":"10001","key":"OPS-7","self":"http://x/rest/api/3/issue/10001","fields":{
	"summary":"Deploy","labels":["b","agent-smith:pending"],
	"description":{"type":"doc","version":1,"content":[{"type":"paragraph","content":[{"type":"text","text":"Ship it"}]}]},
	"status":{"name":"In Progress","statusCategory":{"key":"indeterminate"}}}}`

var ref7 = platforms.Ref{Platform: Platform, Project: "ops", ID: "OPS-7"}

func TestCloudRequests(t *testing.T) {
	tr, f, l := newFake(t, "", "bot@example.com",
		reply{200, issueJSONv3},
		reply{204, ""},
		reply{201, `{"id":"1"}`},
		reply{200, `{"issues":[` + issueJSONv3 + `],"nextPageToken":"p2","isLast":false}`},
		reply{200, `{"issues":[{"key":"OPS-8","fields":{"summary":"x","labels":["agent-smith:pending"]}},{"key":"OPS-9","fields":{"labels":["Agent-Smith:Pending"]}}],"isLast":true}`},
	)
	ctx := context.Background()
	tk, err := tr.Get(ctx, ref7)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Title != "Deploy" || tk.Body != "Ship it" || !tk.Open || tk.Version != "" || tk.Ref != ref7 ||
		tk.URL != f.url+"/ctx/browse/OPS-7" || !slices.Equal(tk.Labels, []string{"b", "agent-smith:pending"}) {
		t.Fatalf("ticket %+v", tk)
	}
	got, err := tr.Relabel(ctx, tk, []string{"agent-smith:pending", "agent-smith:done"}, "agent-smith:enqueued")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Labels, []string{"b", "agent-smith:enqueued"}) || tk.Labels[1] != "agent-smith:pending" {
		t.Fatalf("relabelled %q (input now %q)", got.Labels, tk.Labels)
	}
	if err := tr.Comment(ctx, ref7, "Run failed:\n```\nexit 1\n```"); err != nil {
		t.Fatal(err)
	}
	list, err := tr.ListOpen(ctx, "agent-smith:pending")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Ref.ID != "OPS-7" || list[1].Ref.ID != "OPS-8" || list[1].Ref.Project != "ops" {
		t.Fatalf("listed %+v", list)
	}

	s := f.seen
	if len(s) != 5 {
		t.Fatalf("%d requests", len(s))
	}
	for _, r := range s {
		if r.auth != "Basic Ym90QGV4YW1wbGUuY29tOnRvaw==" { // bot@example.com:tok
			t.Errorf("%s %s: Authorization %q", r.method, r.path, r.auth)
		}
	}
	if s[0].method != "GET" || s[0].path != "/ctx/rest/api/3/issue/OPS-7" || s[0].query.Get("fields") != issueFields {
		t.Errorf("get: %+v", s[0])
	}
	// Cloud asks for the issue in the answer; a 204 leaves the
	// computed labels, not Whole.
	if s[1].method != "PUT" || s[1].path != "/ctx/rest/api/3/issue/OPS-7" || s[1].query.Get("returnIssue") != "true" || got.Whole ||
		!jsonEqual(s[1].body, `{"update":{"labels":[{"remove":"agent-smith:pending"},{"remove":"agent-smith:done"},{"add":"agent-smith:enqueued"}]}}`) {
		t.Errorf("relabel: %+v", s[1])
	}
	if !slices.Equal(l.taken, []string{"agentsmith:jira-label-lock:jira:OPS-7"}) || l.ttls[0] != DefaultLockTTL || l.unlocked != 1 {
		t.Errorf("locker: taken %q ttls %v unlocked %d", l.taken, l.ttls, l.unlocked)
	}
	wantADF := `{"body":{"type":"doc","version":1,"content":[
		{"type":"paragraph","content":[{"type":"text","text":"Run failed:"}]},
		{"type":"codeBlock","content":[{"type":"text","text":"exit 1"}]}]}}`
	if s[2].method != "POST" || s[2].path != "/ctx/rest/api/3/issue/OPS-7/comment" || !jsonEqual(s[2].body, wantADF) {
		t.Errorf("comment: %+v", s[2])
	}
	// Cloud searches with POST search/jql and reconciles the issue this
	// tracker just wrote (its id 10001 came with the Get).
	wantJQL := `project = "OPS" AND labels = "agent-smith:pending" AND statusCategory != Done ORDER BY key ASC`
	if s[3].method != "POST" || s[3].path != "/ctx/rest/api/3/search/jql" || !jsonEqual(s[3].body, `{"jql":`+strconv.Quote(wantJQL)+`,
		"fields":["summary","description","labels","status","project"],"maxResults":100,"reconcileIssues":[10001]}`) {
		t.Errorf("search page 1: %+v", s[3])
	}
	if !jsonEqual(s[4].body, `{"jql":`+strconv.Quote(wantJQL)+`,
		"fields":["summary","description","labels","status","project"],"maxResults":100,"nextPageToken":"p2","reconcileIssues":[10001]}`) {
		t.Errorf("search page 2: %+v", s[4])
	}
}

func TestDataCenterRequests(t *testing.T) {
	issue := `{"key":"OPS-7","fields":{"summary":"Deploy","description":"Ship it","labels":[],"status":{"statusCategory":{"key":"done"}}}}`
	tr, f, _ := newFake(t, DeploymentDataCenter, "",
		reply{200, issue},
		reply{201, `{"id":"1"}`},
		reply{200, `{"startAt":0,"maxResults":2,"total":3,"issues":[{"key":"OPS-1","fields":{"labels":["x"]}},{"key":"OPS-2","fields":{"labels":["x"]}}]}`},
		reply{200, `{"startAt":2,"maxResults":2,"total":3,"issues":[{"key":"OPS-3","fields":{"labels":["x"]}}]}`},
	)
	ctx := context.Background()
	tk, err := tr.Get(ctx, ref7)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Open || tk.Body != "Ship it" || tk.Labels == nil {
		t.Fatalf("ticket %+v", tk)
	}
	if err := tr.Comment(ctx, ref7, "plain *text*"); err != nil {
		t.Fatal(err)
	}
	list, err := tr.ListOpen(ctx, "x")
	if err != nil || len(list) != 3 {
		t.Fatalf("listed %d, %v", len(list), err)
	}
	s := f.seen
	for _, r := range s {
		if r.auth != "Bearer tok" {
			t.Errorf("%s %s: Authorization %q", r.method, r.path, r.auth)
		}
	}
	if s[0].path != "/ctx/rest/api/2/issue/OPS-7" {
		t.Errorf("get: %+v", s[0])
	}
	if s[1].path != "/ctx/rest/api/2/issue/OPS-7/comment" || !jsonEqual(s[1].body, `{"body":"plain *text*"}`) {
		t.Errorf("comment: %+v", s[1])
	}
	if s[2].path != "/ctx/rest/api/2/search" || s[2].query.Has("startAt") || s[3].query.Get("startAt") != "2" {
		t.Errorf("search: %+v / %+v", s[2], s[3])
	}
}

func TestErrors(t *testing.T) {
	tr, _, l := newFake(t, "", "",
		reply{404, `{"errorMessages":["Issue does not exist or you do not have permission to see it."],"errors":{}}`},
		reply{400, `{"errorMessages":[],"errors":{"labels":"The label 'a' is invalid."}}`},
		reply{410, `{"errorMessages":["The requested API has been removed."],"errors":{}}`},
	)
	ctx := context.Background()
	_, err := tr.Get(ctx, ref7)
	if !errors.Is(err, platforms.ErrNotFound) || !strings.Contains(err.Error(), "Issue does not exist") {
		t.Errorf("404: %v", err)
	}
	tk := &platforms.Ticket{Ref: ref7, Labels: []string{"a"}}
	_, err = tr.Relabel(ctx, tk, nil, "b")
	if err == nil || errors.Is(err, platforms.ErrPreconditionFailed) || !strings.Contains(err.Error(), "labels - The label 'a' is invalid.") {
		t.Errorf("400: %v", err)
	}
	if l.unlocked != 1 || len(l.held) != 0 {
		t.Errorf("lock not released after a failed write: unlocked %d held %v", l.unlocked, l.held)
	}
	if _, err := tr.ListOpen(ctx, "x"); err == nil || !strings.Contains(err.Error(), "removed") {
		t.Errorf("410: %v", err)
	}

	// Refused before any request: a label Jira cannot hold, a foreign ref,
	// a broken Locker, a held lock.
	if _, err := tr.Relabel(ctx, tk, nil, "has space"); err == nil || !strings.Contains(err.Error(), "spaces") {
		t.Errorf("label with a space: %v", err)
	}
	if _, err := tr.Get(ctx, platforms.Ref{Platform: Platform, ID: "OTHER-1"}); err == nil {
		t.Errorf("foreign project accepted")
	}
	if _, err := tr.Get(ctx, platforms.Ref{Platform: "github", ID: "OPS-1"}); err == nil {
		t.Errorf("foreign platform accepted")
	}
	l.err = errors.New("redis down")
	if _, err := tr.Relabel(ctx, tk, nil, "b"); err == nil || errors.Is(err, platforms.ErrPreconditionFailed) || !strings.Contains(err.Error(), "redis down") {
		t.Errorf("locker error: %v", err)
	}
	l.err = nil
	l.held = map[string]bool{"agentsmith:jira-label-lock:jira:OPS-7": true}
	if _, err := tr.Relabel(ctx, tk, nil, "b"); !errors.Is(err, platforms.ErrPreconditionFailed) {
		t.Errorf("held lock: %v", err)
	}
	// Nothing to change needs no lock and no request.
	l.held = map[string]bool{"agentsmith:jira-label-lock:jira:OPS-7": true}
	if got, err := tr.Relabel(ctx, tk, nil, ""); err != nil || !slices.Equal(got.Labels, []string{"a"}) {
		t.Errorf("empty relabel: %v %v", got, err)
	}
}

func TestNew(t *testing.T) {
	ok := Options{BaseURL: "https://acme.atlassian.net", Repo: "OPS", Locker: &memLocker{}}
	if tr, err := New(ok); err != nil || tr.Locator() != "OPS" || tr.api != "rest/api/3/" || tr.lockTTL != DefaultLockTTL {
		t.Fatalf("New(%+v) = %+v, %v", ok, tr, err)
	}
	for name, mut := range map[string]func(o *Options){
		"no locker":      func(o *Options) { o.Locker = nil },
		"no base URL":    func(o *Options) { o.BaseURL = "" },
		"relative URL":   func(o *Options) { o.BaseURL = "acme.atlassian.net" },
		"bad key":        func(o *Options) { o.Repo = "owner/repo" },
		"empty key":      func(o *Options) { o.Repo = "" },
		"bad deployment": func(o *Options) { o.Deployment = "server" },
	} {
		o := ok
		mut(&o)
		if _, err := New(o); err == nil {
			t.Errorf("%s: New accepted %+v", name, o)
		}
	}
	o := ok
	o.Deployment, o.LockTTL = DeploymentDataCenter, 3*time.Second
	if tr, err := New(o); err != nil || tr.api != "rest/api/2/" || tr.cloud || tr.lockTTL != 3*time.Second {
		t.Fatalf("data center: %+v, %v", tr, err)
	}
}

func TestIDs(t *testing.T) {
	if id := FormatID("OPS", 12); id != "OPS-12" {
		t.Fatalf("FormatID = %q", id)
	}
	key, n, err := ParseID("MY_PROJ2-12")
	if err != nil || key != "MY_PROJ2" || n != 12 {
		t.Fatalf("ParseID = %q %d %v", key, n, err)
	}
	for _, bad := range []string{"", "OPS", "OPS-", "-12", "OPS-0", "OPS--1", "OPS-+1", "OPS-x", "2OPS-1", "a/b#1", "OP S-1"} {
		if _, _, err := ParseID(bad); err == nil {
			t.Errorf("ParseID(%q) accepted", bad)
		}
	}
}

func TestListQueryQuotes(t *testing.T) {
	if q := ListQuery("OPS", `we"ird\label`); q != `project = "OPS" AND labels = "we\"ird\\label" AND statusCategory != Done ORDER BY key ASC` {
		t.Fatalf("ListQuery = %s", q)
	}
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}
