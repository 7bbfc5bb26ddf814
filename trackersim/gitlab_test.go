//lint:file-ignore SA1019 go-gitlab is archived (successor gitlab.com/gitlab-org/api/client-go); the daemon pins it on purpose, see platforms/gitlab/sdk.go.

package trackersim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gitlab "github.com/xanzy/go-gitlab"
)

const glRepo = "acme/backend/api"

func startGitLab(t *testing.T, opts Options) (*Sim, *gitlab.Client, *httptest.Server) {
	t.Helper()
	s := New(opts)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { srv.Close(); s.Close() })
	c, err := gitlab.NewClient("tok", gitlab.WithBaseURL(srv.URL+"/gitlab/"), gitlab.WithHTTPClient(srv.Client()),
		gitlab.WithCustomRetryMax(0))
	if err != nil {
		t.Fatal(err)
	}
	return s, c, srv
}

func glStatus(err error) int {
	var er *gitlab.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}

func TestGitLabGetIssue(t *testing.T) {
	t.Parallel()
	s, c, srv := startGitLab(t, Options{})
	n := s.CreateIssue(glRepo, "Fix it", "body", "zeta", "Bug", "agent-smith")
	is, _, err := c.Issues.GetIssue(glRepo, n)
	if err != nil {
		t.Fatal(err)
	}
	if is.IID != n || is.Title != "Fix it" || is.Description != "body" || is.State != "opened" ||
		!strings.HasSuffix(is.WebURL, "/gitlab/acme/backend/api/-/issues/1") {
		t.Fatalf("issue = %+v", is)
	}
	// GitLab serialises label names sorted by title, case-sensitively.
	if want := (gitlab.Labels{"Bug", "agent-smith", "zeta"}); !slices.Equal(is.Labels, want) {
		t.Fatalf("labels = %q, want %q", is.Labels, want)
	}
	// The numeric project id works as well as the path.
	byID, _, err := c.Issues.GetIssue(is.ProjectID, n)
	if err != nil || byID.ID != is.ID {
		t.Fatalf("by project id: %v %+v", err, byID)
	}
	// go-gitlab turns every 404 into gitlab.ErrNotFound; the bodies are GitLab's.
	_, resp, err := c.Issues.GetIssue(glRepo, 99)
	if !errors.Is(err, gitlab.ErrNotFound) || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("missing issue err = %v", err)
	}
	for path, want := range map[string]string{
		"/gitlab/api/v4/projects/acme%2Fbackend%2Fapi/issues/99": `{"message":"404 Issue Not Found"}`,
		"/gitlab/api/v4/projects/acme%2Fnope/issues/1":           `{"message":"404 Project Not Found"}`,
		"/gitlab/api/v4/nothing":                                 `{"error":"404 Not Found"}`,
	} {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || strings.TrimSpace(string(b)) != want {
			t.Errorf("GET %s = %d %s, want 404 %s", path, resp.StatusCode, b, want)
		}
	}
}

func TestGitLabUpdateLabels(t *testing.T) {
	t.Parallel()
	s, c, _ := startGitLab(t, Options{})
	n := s.CreateIssue(glRepo, "Relabel", "", "bug", "agent-smith:pending")
	add := gitlab.LabelOptions{"agent-smith:enqueued"}
	remove := gitlab.LabelOptions{"agent-smith:pending", "agent-smith:failed"} // failed is absent: ignored
	is, _, err := c.Issues.UpdateIssue(glRepo, n, &gitlab.UpdateIssueOptions{AddLabels: &add, RemoveLabels: &remove})
	if err != nil {
		t.Fatal(err)
	}
	if want := (gitlab.Labels{"agent-smith:enqueued", "bug"}); !slices.Equal(is.Labels, want) {
		t.Fatalf("labels = %q, want %q", is.Labels, want)
	}
	ws := s.Writes()
	if len(ws) != 1 || !slices.Equal(ws[0].After, []string{"bug", "agent-smith:enqueued"}) {
		t.Fatalf("writes = %+v", ws)
	}
	closeEv := "close"
	is, _, err = c.Issues.UpdateIssue(glRepo, n, &gitlab.UpdateIssueOptions{StateEvent: &closeEv})
	if err != nil || is.State != "closed" || is.ClosedAt == nil {
		t.Fatalf("close: %v %+v", err, is)
	}
}

func TestGitLabNotes(t *testing.T) {
	t.Parallel()
	s, c, _ := startGitLab(t, Options{})
	n := s.CreateIssue(glRepo, "Talk", "")
	body := "run **42** — 日本語"
	note, resp, err := c.Notes.CreateIssueNote(glRepo, n, &gitlab.CreateIssueNoteOptions{Body: &body})
	if err != nil || resp.StatusCode != http.StatusCreated || note.Body != body || note.NoteableIID != n {
		t.Fatalf("create note: %v %+v", err, note)
	}
	notes, _, err := c.Notes.ListIssueNotes(glRepo, n, nil)
	if err != nil || len(notes) != 1 || notes[0].Body != body {
		t.Fatalf("list notes: %v %+v", err, notes)
	}
	empty := " "
	if _, _, err := c.Notes.CreateIssueNote(glRepo, n, &gitlab.CreateIssueNoteOptions{Body: &empty}); glStatus(err) != http.StatusBadRequest {
		t.Fatalf("empty note err = %v", err)
	}
	if is, _ := s.Issue(glRepo, n); len(is.Comments) != 1 {
		t.Fatalf("comments = %+v", is.Comments)
	}
}

func TestGitLabListPagination(t *testing.T) {
	t.Parallel()
	s, c, _ := startGitLab(t, Options{})
	for i := 0; i < 7; i++ {
		s.CreateIssue(glRepo, "listed", "", "agent-smith:pending")
	}
	s.CreateIssue(glRepo, "other", "", "bug")
	closed := s.CreateIssue(glRepo, "closed", "", "agent-smith:pending")
	if err := s.SetOpen(glRepo, closed, false); err != nil {
		t.Fatal(err)
	}
	opts := &gitlab.ListProjectIssuesOptions{State: gitlab.Ptr("opened"),
		Labels: &gitlab.LabelOptions{"agent-smith:pending"}, ListOptions: gitlab.ListOptions{PerPage: 3}}
	var got []int
	pages := 0
	for {
		issues, resp, err := c.Issues.ListProjectIssues(glRepo, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if resp.TotalItems != 7 || resp.TotalPages != 3 || resp.ItemsPerPage != 3 {
			t.Fatalf("page headers: total %d pages %d per %d", resp.TotalItems, resp.TotalPages, resp.ItemsPerPage)
		}
		for _, is := range issues {
			got = append(got, is.IID)
		}
		if resp.NextPage == 0 {
			if !strings.Contains(resp.Header.Get("Link"), `rel="first"`) {
				t.Fatalf("Link = %q", resp.Header.Get("Link"))
			}
			break
		}
		opts.Page = resp.NextPage
	}
	slices.Sort(got)
	if pages != 3 || !slices.Equal(got, []int{1, 2, 3, 4, 5, 6, 7}) {
		t.Fatalf("pages %d got %v", pages, got)
	}
	// Default state is all; default order is newest first.
	all, _, err := c.Issues.ListProjectIssues(glRepo, &gitlab.ListProjectIssuesOptions{})
	if err != nil || len(all) != 9 || all[0].IID != 9 {
		t.Fatalf("all: %v len %d", err, len(all))
	}
}

func TestGitLabAuthAndFaults(t *testing.T) {
	t.Parallel()
	s, c, srv := startGitLab(t, Options{Tokens: []string{"tok"}})
	n := s.CreateIssue(glRepo, "Auth", "")
	if _, _, err := c.Issues.GetIssue(glRepo, n); err != nil {
		t.Fatal(err)
	}
	bad, err := gitlab.NewClient("wrong", gitlab.WithBaseURL(srv.URL+"/gitlab/api/v4"), gitlab.WithCustomRetryMax(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := bad.Issues.GetIssue(glRepo, n); glStatus(err) != http.StatusUnauthorized {
		t.Fatalf("bad token err = %v", err)
	}
	s.SetFaults(Faults{RateLimitNext: 1, RetryAfter: 7})
	_, resp, err := c.Issues.GetIssue(glRepo, n)
	if glStatus(err) != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "7" {
		t.Fatalf("429 fault: %v", err)
	}
	s.SetFaults(Faults{ErrorRate: 1})
	if _, _, err := c.Issues.GetIssue(glRepo, n); glStatus(err) != http.StatusBadGateway {
		t.Fatalf("502 fault: %v", err)
	}
	s.SetFaults(Faults{})
	if got := s.Stats().Calls["GET /gitlab/api/v4/projects/{id}/issues/{iid}"]; got != 4 {
		t.Fatalf("calls = %d, want 4", got)
	}
}

type glDelivery struct {
	header http.Header
	body   glIssueHook
}

func glReceiver(t *testing.T) (*httptest.Server, func() []glDelivery) {
	t.Helper()
	var mu sync.Mutex
	var got []glDelivery
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var p glIssueHook
		if err := json.Unmarshal(b, &p); err != nil {
			t.Errorf("delivery body: %v", err)
		}
		mu.Lock()
		got = append(got, glDelivery{header: r.Header.Clone(), body: p})
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv, func() []glDelivery {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

func TestGitLabWebhooks(t *testing.T) {
	t.Parallel()
	s, c, _ := startGitLab(t, Options{})
	recv, got := glReceiver(t)
	s.AddHook(Hook{Repo: glRepo, URL: recv.URL, Secret: "s3cret", Dialect: "gitlab"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	n := s.CreateIssue(glRepo, "Hooked", "desc", "agent-smith", "bug")
	add := gitlab.LabelOptions{"agent-smith:enqueued"}
	if _, _, err := c.Issues.UpdateIssue(glRepo, n, &gitlab.UpdateIssueOptions{AddLabels: &add}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetOpen(glRepo, n, false); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	ds := got()
	// No ping on creation; one delivery per write.
	if len(ds) != 3 {
		t.Fatalf("deliveries = %d, want 3", len(ds))
	}
	for i, want := range []string{"open", "update", "close"} {
		d := ds[i]
		if d.header.Get("X-Gitlab-Event") != "Issue Hook" || d.header.Get("X-Gitlab-Token") != "s3cret" ||
			d.header.Get("Idempotency-Key") == "" || d.header.Get("X-Gitlab-Event-UUID") == "" {
			t.Fatalf("delivery %d headers %v", i, d.header)
		}
		p := d.body
		if p.ObjectKind != "issue" || p.EventType != "issue" || p.ObjectAttributes.Action != want ||
			p.Project.PathWithNamespace != glRepo || p.ObjectAttributes.IID != n || p.ObjectAttributes.URL == "" {
			t.Fatalf("delivery %d = %+v", i, p)
		}
	}
	if ds[0].header.Get("Idempotency-Key") == ds[1].header.Get("Idempotency-Key") {
		t.Fatalf("two writes share an idempotency key")
	}
	up := ds[1].body
	var titles []string
	for _, l := range up.ObjectAttributes.Labels {
		titles = append(titles, l.Title)
	}
	if !slices.Equal(titles, []string{"agent-smith", "agent-smith:enqueued", "bug"}) {
		t.Fatalf("labels = %q", titles)
	}
	ch, ok := up.Changes["labels"].(map[string]any)
	if !ok || len(ch["previous"].([]any)) != 2 || len(ch["current"].([]any)) != 3 {
		t.Fatalf("changes.labels = %#v", up.Changes["labels"])
	}
	if ds[2].body.ObjectAttributes.State != "closed" {
		t.Fatalf("close state = %q", ds[2].body.ObjectAttributes.State)
	}
}

func TestGitLabWebhookDuplicatesAndGitHubUnchanged(t *testing.T) {
	t.Parallel()
	s, _, _ := startGitLab(t, Options{})
	gl, glGot := glReceiver(t)
	var mu sync.Mutex
	var ghEvents []string
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ghEvents = append(ghEvents, r.Header.Get("X-GitHub-Event"))
		mu.Unlock()
	}))
	t.Cleanup(gh.Close)
	s.AddHook(Hook{Repo: glRepo, URL: gl.URL, Dialect: "gitlab"})
	s.AddHook(Hook{Repo: glRepo, URL: gh.URL})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	s.SetFaults(Faults{Duplicate: 1})
	s.CreateIssue(glRepo, "Twice", "", "agent-smith")
	if err := s.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	ds := glGot()
	if len(ds) != 2 || ds[0].header.Get("Idempotency-Key") != ds[1].header.Get("Idempotency-Key") {
		t.Fatalf("gitlab deliveries %d, keys differ or wrong count", len(ds))
	}
	if ds[0].header.Get("X-Gitlab-Token") != "" {
		t.Fatalf("token header sent for a hook without secret")
	}
	mu.Lock()
	defer mu.Unlock()
	// GitHub hook: ping, then opened + labeled, each twice.
	if want := []string{"ping", "issues", "issues", "issues", "issues"}; !slices.Equal(ghEvents, want) {
		t.Fatalf("github events = %q, want %q", ghEvents, want)
	}
}

func TestGitLabPageListsEveryDialect(t *testing.T) {
	t.Parallel()
	s, _, srv := startGitLab(t, Options{})
	s.CreateIssue(glRepo, "GitLab issue", "")
	s.CreateIssue("demo/app", "GitHub issue", "")
	resp, err := srv.Client().Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	page := string(b)
	for _, want := range []string{"GitLab issue", "GitHub issue", "/gitlab/api/v4/", "/sim/labels?"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// The page's button adds the trigger label to a three-segment project.
	noRedirect := *srv.Client()
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err = noRedirect.PostForm(srv.URL+"/sim/labels?repo="+glRepo+"&number=1&label=agent-smith", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if is, _ := s.Issue(glRepo, 1); resp.StatusCode != http.StatusSeeOther || !slices.Contains(is.Labels, "agent-smith") {
		t.Fatalf("add label: status %d labels %q", resp.StatusCode, is.Labels)
	}
}

func TestGitLabEditNeedsAParameter(t *testing.T) {
	t.Parallel()
	s, c, _ := startGitLab(t, Options{})
	n := s.CreateIssue(glRepo, "Nothing", "")
	if _, _, err := c.Issues.UpdateIssue(glRepo, n, &gitlab.UpdateIssueOptions{}); glStatus(err) != http.StatusBadRequest {
		t.Fatalf("empty edit err = %v, want 400", err)
	}
}
