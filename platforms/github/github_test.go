package github

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

func ref(n string) platforms.Ref { return platforms.Ref{Platform: Platform, ID: "octo/repo#" + n} }

func TestFormatParseID(t *testing.T) {
	id := FormatID("octo/repo", 12)
	if id != "octo/repo#12" {
		t.Fatalf("FormatID = %q", id)
	}
	repo, n, err := ParseID(id)
	if err != nil || repo != "octo/repo" || n != 12 {
		t.Fatalf("ParseID(%q) = %q, %d, %v", id, repo, n, err)
	}
	for _, bad := range []string{"", "#1", "octo#1", "octo/repo", "octo/repo#", "octo/repo#0", "octo/repo#-3", "octo/repo#x", "/repo#1", "octo/#1", "a/b/c#1"} {
		if _, _, err := ParseID(bad); err == nil {
			t.Errorf("ParseID(%q) accepted", bad)
		}
	}
}

func TestNewRejectsBadRepo(t *testing.T) {
	for _, repo := range []string{"", "octo", "octo/", "/repo", "a/b/c"} {
		if _, err := New(Options{Repo: repo}); err == nil {
			t.Errorf("New(Repo %q) accepted", repo)
		}
	}
	tr, err := New(Options{Repo: "octo/repo"})
	if err != nil || tr.Locator() != "octo/repo" {
		t.Fatalf("New: %v, locator %q", err, tr.Locator())
	}
}

func TestGet(t *testing.T) {
	f, srv := newFake(t)
	f.add(&fakeIssue{title: "first", open: true, labels: []string{"bug", "agent-smith:pending"}})
	f.add(&fakeIssue{title: "a pull request", open: true, pr: true})
	tr := newTracker(t, srv)
	ctx := context.Background()

	tk, err := tr.Get(ctx, ref("1"))
	if err != nil {
		t.Fatal(err)
	}
	want := platforms.Ref{Platform: Platform, Project: "proj", ID: "octo/repo#1"}
	if tk.Ref != want || tk.Title != "first" || !tk.Open || tk.Version != `W/"1-0"` ||
		!slices.Equal(tk.Labels, []string{"bug", "agent-smith:pending"}) || tk.URL != "https://github.com/octo/repo/issues/1" {
		t.Fatalf("Get = %+v", tk)
	}
	if auth := f.seen()[0].Header.Get("Authorization"); auth != "Bearer tok" {
		t.Errorf("Authorization = %q", auth)
	}

	// The second read revalidates and is answered from the cache.
	again, err := tr.Get(ctx, ref("1"))
	if err != nil || again.Version != tk.Version || !slices.Equal(again.Labels, tk.Labels) {
		t.Fatalf("revalidated Get = %+v, %v", again, err)
	}
	if inm := f.seen()[1].Header.Get("If-None-Match"); inm != tk.Version {
		t.Errorf("If-None-Match = %q, want %q", inm, tk.Version)
	}

	for _, r := range []platforms.Ref{ref("2"), ref("99")} {
		if _, err := tr.Get(ctx, r); !errors.Is(err, platforms.ErrNotFound) {
			t.Errorf("Get(%s) err = %v, want ErrNotFound", r, err)
		}
	}
	for _, r := range []platforms.Ref{
		{Platform: "gitlab", ID: "octo/repo#1"},
		{Platform: Platform, ID: "other/repo#1"},
		{Platform: Platform, ID: "garbage"},
	} {
		if _, err := tr.Get(ctx, r); err == nil || errors.Is(err, platforms.ErrNotFound) {
			t.Errorf("Get(%s) err = %v, want a refusal", r, err)
		}
	}
}

// TestRelabel: a transition is one POST of the new label and one DELETE per
// old lifecycle label, added before removed, with no If-Match (GitHub
// refuses or ignores it on writes).
func TestRelabel(t *testing.T) {
	f, srv := newFake(t)
	f.add(&fakeIssue{title: "x", open: true, labels: []string{"bug", "agent-smith:pending", "zeta"}})
	tr := newTracker(t, srv)
	ctx := context.Background()
	tk, err := tr.Get(ctx, ref("1"))
	if err != nil {
		t.Fatal(err)
	}
	before := len(f.seen())
	got, err := tr.Relabel(ctx, tk, []string{"agent-smith:pending"}, "agent-smith:enqueued")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"bug", "zeta", "agent-smith:enqueued"}; !slices.Equal(got.Labels, want) {
		t.Errorf("labels = %q, want %q", got.Labels, want)
	}
	if got.Ref.Project != "proj" || got.Title != "x" || got.Version != "" {
		t.Errorf("returned %+v", got)
	}
	writes := f.seen()[before:]
	var calls []string
	for _, r := range writes {
		calls = append(calls, r.Method+" "+r.URL.Path)
		if r.Header.Get("If-Match") != "" || r.Header.Get(trackerhttp.WriterHeader) != "test-writer" {
			t.Errorf("%s %s: If-Match %q writer %q", r.Method, r.URL.Path, r.Header.Get("If-Match"), r.Header.Get(trackerhttp.WriterHeader))
		}
	}
	if want := []string{"POST /repos/octo/repo/issues/1/labels", "DELETE /repos/octo/repo/issues/1/labels/agent-smith:pending"}; !slices.Equal(calls, want) {
		t.Errorf("calls = %q, want %q", calls, want)
	}

	// A label someone else removed first is gone already: no error.
	f.beforeWrite = func(is *fakeIssue) { is.labels = relabel(is.labels, []string{"agent-smith:enqueued"}, "") }
	got, err = tr.Relabel(ctx, got, []string{"agent-smith:enqueued"}, "agent-smith:in-progress")
	if err != nil || !slices.Equal(got.Labels, []string{"bug", "zeta", "agent-smith:in-progress"}) {
		t.Fatalf("Relabel with the old label already gone = %+v, %v", got, err)
	}

	// Other people's labels coming and going are no conflict.
	f.beforeWrite = func(is *fakeIssue) {
		if !contains(is.labels, "human") {
			is.labels = append(relabel(is.labels, []string{"zeta"}, ""), "human")
		}
	}
	got, err = tr.Relabel(ctx, got, []string{"agent-smith:in-progress"}, "agent-smith:done")
	if err != nil || !slices.Equal(f.issues[1].labels, []string{"bug", "human", "agent-smith:done"}) {
		t.Fatalf("Relabel during a human edit: err %v, labels %q", err, f.issues[1].labels)
	}

	// A lifecycle label another writer put there is a lost race, and the
	// label this write added is taken back.
	f.beforeWrite = func(is *fakeIssue) {
		if !contains(is.labels, "agent-smith:pending") {
			is.labels = append(is.labels, "agent-smith:pending")
		}
	}
	_, err = tr.Relabel(ctx, got, []string{"agent-smith:done"}, "agent-smith:failed")
	if !errors.Is(err, platforms.ErrPreconditionFailed) {
		t.Fatalf("Relabel after a foreign lifecycle write: err %v, want ErrPreconditionFailed", err)
	}
	if want := []string{"bug", "human", "agent-smith:done", "agent-smith:pending"}; !slices.Equal(f.issues[1].labels, want) {
		t.Errorf("labels after the lost race = %q, want %q", f.issues[1].labels, want)
	}
}

func TestRelabelLabels(t *testing.T) {
	for _, c := range []struct {
		labels, remove []string
		add            string
		want           []string
	}{
		{nil, nil, "a", []string{"a"}},
		{[]string{"a", "b"}, []string{"a"}, "", []string{"b"}},
		{[]string{"x", "p", "y"}, []string{"p", "q"}, "q", []string{"x", "y", "q"}},
		{[]string{"x", "q", "y"}, []string{"p", "q"}, "q", []string{"x", "q", "y"}},
		{[]string{"q", "x", "q"}, nil, "q", []string{"q", "x"}},
		{[]string{"A:done", "a:done"}, []string{"a:done"}, "", []string{"A:done"}},
		{[]string{"a"}, []string{"zzz"}, "", []string{"a"}},
	} {
		if got := relabel(c.labels, c.remove, c.add); !slices.Equal(got, c.want) {
			t.Errorf("relabel(%q, -%q, +%q) = %q, want %q", c.labels, c.remove, c.add, got, c.want)
		}
	}
	// Never nil: an empty array clears the labels; a missing one would not.
	if got := relabel([]string{"a"}, []string{"a"}, ""); got == nil {
		t.Errorf("relabel to no labels returned nil")
	}
}

func TestComment(t *testing.T) {
	f, srv := newFake(t)
	f.add(&fakeIssue{title: "x", open: true})
	tr := newTracker(t, srv)
	if err := tr.Comment(context.Background(), ref("1"), "hello"); err != nil {
		t.Fatal(err)
	}
	if c := f.issues[1].comments; !slices.Equal(c, []string{"hello"}) {
		t.Fatalf("comments = %q", c)
	}
	if err := tr.Comment(context.Background(), ref("5"), "hello"); !errors.Is(err, platforms.ErrNotFound) {
		t.Fatalf("comment on missing issue: %v", err)
	}
}

func TestListOpenFollowsPages(t *testing.T) {
	f, srv := newFake(t)
	f.perPage = 3
	var want []string
	for i := 0; i < 8; i++ {
		f.add(&fakeIssue{title: "t", open: true, labels: []string{"bug", "trigger"}})
		want = append(want, FormatID("octo/repo", i+1))
	}
	f.add(&fakeIssue{title: "pr", open: true, pr: true, labels: []string{"trigger"}})
	f.add(&fakeIssue{title: "closed", labels: []string{"trigger"}})
	f.add(&fakeIssue{title: "other", open: true, labels: []string{"bug"}})
	tr := newTracker(t, srv)

	got, err := tr.ListOpen(context.Background(), "trigger")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tk := range got {
		ids = append(ids, tk.Ref.ID)
		if tk.Version != "" || tk.Ref.Project != "proj" {
			t.Errorf("listed %+v", tk)
		}
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("ListOpen = %q, want %q", ids, want)
	}
	reqs := f.seen()
	if len(reqs) != 3 { // 9 open matches (8 issues, 1 pull request) in pages of 3
		t.Errorf("ListOpen made %d requests, want 3", len(reqs))
	}
	q := reqs[0].URL.Query()
	if q.Get("state") != "open" || q.Get("labels") != "trigger" || q.Get("per_page") != "100" {
		t.Errorf("list query = %s", reqs[0].URL.RawQuery)
	}
}

func TestRateLimitedReadIsRetried(t *testing.T) {
	f, srv := newFake(t)
	f.add(&fakeIssue{title: "x", open: true})
	f.limited = 1
	now := time.Unix(1_700_000_000, 0) // the fake's reset is 10s later
	var slept []time.Duration
	hc := &http.Client{Transport: trackerhttp.NewTransport(nil, trackerhttp.Options{
		Clock: func() time.Time { return now },
		Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); now = now.Add(d); return nil },
	})}
	tr, err := New(Options{BaseURL: srv.URL + "/api", Repo: "octo/repo", HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Get(context.Background(), ref("1")); err != nil {
		t.Fatalf("Get after a rate-limit answer: %v", err)
	}
	if !slices.Equal(slept, []time.Duration{10 * time.Second}) || len(f.seen()) != 2 {
		t.Fatalf("slept %v over %d requests, want one 10s wait and a retry", slept, len(f.seen()))
	}
}

func TestExhaustedLimitIsErrRateLimited(t *testing.T) {
	f, srv := newFake(t)
	f.add(&fakeIssue{title: "x", open: true})
	f.exhaustedUntil = time.Now().Add(time.Hour).Unix()
	tr := newTracker(t, srv)
	if _, err := tr.Get(context.Background(), ref("1")); err != nil {
		t.Fatalf("last request of the window: %v", err)
	}
	// Nothing left until the reset an hour away: refused without a request.
	_, err := tr.Get(context.Background(), ref("1"))
	if !errors.Is(err, trackerhttp.ErrRateLimited) {
		t.Fatalf("err = %v, want ErrRateLimited", err)
	}
	if n := len(f.seen()); n != 1 {
		t.Fatalf("%d requests reached the server, want 1", n)
	}
}
