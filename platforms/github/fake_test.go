package github

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeGitHub is the few issue endpoints the tracker calls, for unit tests
// that need to see requests the emulator does not expose (headers, query
// strings, pagination links). The conformance suite runs against trackersim.
type fakeGitHub struct {
	t       *testing.T
	repo    string
	perPage int

	mu       sync.Mutex
	issues   map[int]*fakeIssue
	requests []*http.Request
	// limited answers that many requests with GitHub's primary rate-limit
	// 403; exhaustedUntil, when set, is the X-RateLimit-Reset sent with
	// "remaining 0" on every answer.
	limited        int
	exhaustedUntil int64
	// beforeWrite, when set, runs before each label write (another writer
	// acting at that moment).
	beforeWrite func(is *fakeIssue)
}

type fakeIssue struct {
	number   int
	title    string
	open     bool
	pr       bool
	labels   []string
	comments []string
	rev      int
}

func newFake(t *testing.T) (*fakeGitHub, *httptest.Server) {
	f := &fakeGitHub{t: t, repo: "octo/repo", perPage: 100, issues: map[int]*fakeIssue{}}
	srv := httptest.NewServer(http.StripPrefix("/api", f))
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeGitHub) add(is *fakeIssue) {
	f.mu.Lock()
	defer f.mu.Unlock()
	is.number = len(f.issues) + 1
	f.issues[is.number] = is
}

func (f *fakeGitHub) seen() []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*http.Request(nil), f.requests...)
}

func (is *fakeIssue) etag() string { return fmt.Sprintf(`W/"%d-%d"`, is.number, is.rev) }

func (is *fakeIssue) labelsJSON() []map[string]any {
	out := []map[string]any{}
	for _, l := range is.labels {
		out = append(out, map[string]any{"name": l})
	}
	return out
}

func (is *fakeIssue) json(repo string) map[string]any {
	labels := []map[string]any{}
	for _, l := range is.labels {
		labels = append(labels, map[string]any{"name": l})
	}
	state := "closed"
	if is.open {
		state = "open"
	}
	m := map[string]any{
		"number": is.number, "title": is.title, "body": "body of " + is.title, "state": state, "labels": labels,
		"html_url": fmt.Sprintf("https://github.com/%s/issues/%d", repo, is.number),
	}
	if is.pr {
		m["pull_request"] = map[string]any{"url": "https://api.github.com/pulls/1"}
	}
	return m
}

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.Clone(r.Context()))
	if f.exhaustedUntil != 0 {
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(f.exhaustedUntil, 10))
	}
	if f.limited > 0 {
		f.limited--
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", "1700000010")
		http.Error(w, `{"message":"API rate limit exceeded"}`, http.StatusForbidden)
		return
	}
	prefix := "/repos/" + f.repo + "/issues"
	rest, ok := strings.CutPrefix(r.URL.Path, prefix)
	if !ok {
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		return
	}
	if rest == "" && r.Method == http.MethodGet {
		f.list(w, r)
		return
	}
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	n, _ := strconv.Atoi(parts[0])
	is := f.issues[n]
	if is == nil {
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		return
	}
	switch {
	case len(parts) == 1 && r.Method == http.MethodGet:
		w.Header().Set("ETag", is.etag())
		if r.Header.Get("If-None-Match") == is.etag() {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		writeJSON(w, is.json(f.repo))
	case len(parts) == 1 && r.Method == http.MethodPatch:
		if m := r.Header.Get("If-Match"); m != "" && m != is.etag() {
			http.Error(w, `{"message":"Precondition Failed"}`, http.StatusPreconditionFailed)
			return
		}
		var req struct {
			Labels *[]string `json:"labels"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Labels == nil {
			http.Error(w, `{"message":"bad labels"}`, http.StatusUnprocessableEntity)
			return
		}
		is.labels = append([]string(nil), *req.Labels...)
		is.rev++
		w.Header().Set("ETag", is.etag())
		writeJSON(w, is.json(f.repo))
	case len(parts) == 2 && parts[1] == "labels" && r.Method == http.MethodPost:
		var add []string
		if err := json.NewDecoder(r.Body).Decode(&add); err != nil {
			http.Error(w, `{"message":"Problems parsing JSON"}`, http.StatusBadRequest)
			return
		}
		if f.beforeWrite != nil {
			f.beforeWrite(is)
		}
		for _, l := range add {
			if !contains(is.labels, l) {
				is.labels = append(is.labels, l)
			}
		}
		is.rev++
		writeJSON(w, is.labelsJSON())
	case len(parts) == 3 && parts[1] == "labels" && r.Method == http.MethodDelete:
		if f.beforeWrite != nil {
			f.beforeWrite(is)
		}
		name, _ := url.PathUnescape(parts[2])
		if !contains(is.labels, name) {
			http.Error(w, `{"message":"Label does not exist"}`, http.StatusNotFound)
			return
		}
		is.labels = relabel(is.labels, []string{name}, "")
		is.rev++
		writeJSON(w, is.labelsJSON())
	case len(parts) == 2 && parts[1] == "comments" && r.Method == http.MethodPost:
		var c struct{ Body string }
		_ = json.NewDecoder(r.Body).Decode(&c)
		is.comments = append(is.comments, c.Body)
		w.WriteHeader(http.StatusCreated)
		writeJSON(w, map[string]any{"id": len(is.comments), "body": c.Body})
	default:
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
	}
}

// list serves GET /issues with GitHub's filters and Link pagination, capping
// per_page at f.perPage the way GitHub caps it at 100.
func (f *fakeGitHub) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var match []map[string]any
	for n := 1; n <= len(f.issues); n++ {
		is := f.issues[n]
		if (q.Get("state") == "open") != is.open {
			continue
		}
		if l := q.Get("labels"); l != "" && !contains(is.labels, l) {
			continue
		}
		match = append(match, is.json(f.repo))
	}
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 || per > f.perPage {
		per = f.perPage
	}
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	lo := min((page-1)*per, len(match))
	hi := min(lo+per, len(match))
	if hi < len(match) {
		next := *r.URL
		nq := next.Query()
		nq.Set("page", strconv.Itoa(page+1))
		next.RawQuery = nq.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<http://%s/api%s>; rel="next"`, r.Host, next.RequestURI()))
	}
	writeJSON(w, match[lo:hi])
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func newTracker(t *testing.T, srv *httptest.Server) *Tracker {
	t.Helper()
	tr, err := New(Options{BaseURL: srv.URL + "/api", Repo: "octo/repo", Project: "proj", Token: "tok", Writer: "test-writer"})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// relabel is labels minus remove plus add, keeping the order of the others
// and never duplicating add.
func relabel(labels, remove []string, add string) []string {
	out := make([]string, 0, len(labels)+1)
	present := false
	for _, l := range labels {
		if l == add {
			if !present {
				out = append(out, l)
				present = true
			}
			continue
		}
		if !contains(remove, l) {
			out = append(out, l)
		}
	}
	if add != "" && !present {
		out = append(out, add)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
