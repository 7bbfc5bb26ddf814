package trackersim

import (
	"fmt"
	"html"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The GitHub pull request endpoints a pipeline calls to open and find its
// pull request (what `gh pr create` and `gh pr list` do through the REST
// API), so an offline pipeline ends with a real link. The sim holds no git
// data: a pull request records its head and base branch names. GitHub
// refuses a head that was never pushed (422, field head, code invalid:
// https://docs.github.com/rest/pulls/pulls#create-a-pull-request); the sim
// can check that only when Options.Branches says which branches exist.

const docsPulls = "https://docs.github.com/rest/pulls/pulls"

// PullRequest is one pull request as the Go API returns it.
type PullRequest struct {
	Repo      string    `json:"repo"`
	Number    int       `json:"number"`
	Title     string    `json:"title"`
	Body      string    `json:"body"`
	Head      string    `json:"head"`
	Base      string    `json:"base"`
	Author    string    `json:"author"`
	HTMLURL   string    `json:"html_url"`
	CreatedAt time.Time `json:"created_at"`
}

// pullStore keeps the pull requests by repository, oldest first.
type pullStore struct {
	mu    sync.Mutex
	repos map[string][]PullRequest
}

// PullRequests returns repo's pull requests, oldest first.
func (s *Sim) PullRequests(repo string) []PullRequest {
	s.pulls.mu.Lock()
	defer s.pulls.mu.Unlock()
	return slices.Clone(s.pulls.repos[repo])
}

func (s *Sim) githubPullRoutes(mux *http.ServeMux) {
	s.ghRoute(mux, "POST", "/repos/{owner}/{repo}/pulls", docsPulls+"#create-a-pull-request", false, s.ghCreatePull)
	s.ghRoute(mux, "GET", "/repos/{owner}/{repo}/pulls", docsPulls+"#list-pull-requests", false, s.ghListPulls)
}

// pullPath is a pull request's html_url path, GitHub's web shape under
// /github/ ({web}/{owner}/{repo}/pull/{n}); the /github/ fallback serves it
// (a mux pattern for it would conflict with the API's /github/repos/...).
var pullPath = regexp.MustCompile(`^/github/([^/]+/[^/]+)/pull/([0-9]+)$`)

// ghPull is the part of GitHub's pull request object the CLIs read.
type ghPull struct {
	URL       string `json:"url"`
	ID        int64  `json:"id"`
	Number    int    `json:"number"`
	State     string `json:"state"`
	Title     string `json:"title"`
	Body      string `json:"body"`
	HTMLURL   string `json:"html_url"`
	User      ghUser `json:"user"`
	CreatedAt string `json:"created_at"`
	Head      ghRef  `json:"head"`
	Base      ghRef  `json:"base"`
}

type ghRef struct {
	Label string `json:"label"`
	Ref   string `json:"ref"`
}

func (s *Sim) ghPull(base string, id int64, p PullRequest) ghPull {
	owner, _, _ := strings.Cut(p.Repo, "/")
	return ghPull{URL: fmt.Sprintf("%s/pulls/%d", apiRepoURL(base, p.Repo), p.Number), ID: id, Number: p.Number,
		State: "open", Title: p.Title, Body: p.Body, HTMLURL: p.HTMLURL, User: s.ghUser(base, p.Author),
		CreatedAt: ghTime(p.CreatedAt), Head: ghRef{Label: owner + ":" + p.Head, Ref: p.Head},
		Base: ghRef{Label: owner + ":" + p.Base, Ref: p.Base}}
}

// ghCreatePull is "Create a pull request": title, head and base required
// (422 missing_field otherwise; the issue-conversion form is not served);
// head equal to base, or a branch Options.Branches does not know, is 422
// invalid; a second open pull request for the same head and base is 422
// "A pull request already exists for owner:head." (as GitHub answers it:
// https://qiita.com/kyanny/items/9d1f738b500b500aca1b). The number is the
// repository's next issue number: issues and pull requests share one
// sequence on GitHub.
func (s *Sim) ghCreatePull(w http.ResponseWriter, r *http.Request, c *ghCall) {
	var req struct {
		Title string `json:"title"`
		Head  string `json:"head"`
		Base  string `json:"base"`
		Body  string `json:"body"`
	}
	if !decodeJSON(w, r, c, &req) {
		return
	}
	if _, _, ok := s.store.repoInfo(c.repo); !ok {
		writeGHError(w, http.StatusNotFound, "Not Found", c.doc)
		return
	}
	owner, _, _ := strings.Cut(c.repo, "/")
	// "username:branch" names a head in another owner's fork; the sim has
	// no forks, so only the repository's own owner is accepted.
	head, ok := strings.CutPrefix(req.Head, owner+":")
	if !ok && strings.Contains(req.Head, ":") {
		head = ""
	} else if !ok {
		head = req.Head
	}
	invalid := func(field, code string) {
		writeJSON(w, http.StatusUnprocessableEntity, ghError{Message: "Validation Failed", DocumentationURL: c.doc,
			Errors: []ghFieldError{{Resource: "PullRequest", Field: field, Code: code}}})
	}
	switch {
	case strings.TrimSpace(req.Title) == "":
		invalid("title", "missing_field")
		return
	case req.Head == "":
		invalid("head", "missing_field")
		return
	case req.Base == "":
		invalid("base", "missing_field")
		return
	case head == "" || (s.branches != nil && !s.branches(c.repo, head)):
		invalid("head", "invalid")
		return
	case s.branches != nil && !s.branches(c.repo, req.Base):
		invalid("base", "invalid")
		return
	case head == req.Base:
		writeJSON(w, http.StatusUnprocessableEntity, ghError{Message: "Validation Failed", DocumentationURL: c.doc,
			Errors: []ghFieldError{{Resource: "PullRequest", Code: "custom", Message: "No commits between " + req.Base + " and " + head}}})
		return
	}
	s.pulls.mu.Lock()
	for _, p := range s.pulls.repos[c.repo] {
		if p.Head == head && p.Base == req.Base {
			s.pulls.mu.Unlock()
			writeJSON(w, http.StatusUnprocessableEntity, ghError{Message: "Validation Failed", DocumentationURL: c.doc,
				Errors: []ghFieldError{{Resource: "PullRequest", Code: "custom", Message: "A pull request already exists for " + owner + ":" + head + "."}}})
			return
		}
	}
	sn := s.store.reserve(c.repo, req.Title, nil)
	p := PullRequest{Repo: c.repo, Number: sn.number, Title: req.Title, Body: req.Body, Head: head, Base: req.Base,
		Author: c.by.login, CreatedAt: s.clock(),
		HTMLURL: fmt.Sprintf("%s/github/%s/pull/%d", c.base, c.repo, sn.number)}
	if s.pulls.repos == nil {
		s.pulls.repos = map[string][]PullRequest{}
	}
	s.pulls.repos[c.repo] = append(s.pulls.repos[c.repo], p)
	s.pulls.mu.Unlock()
	w.Header().Set("Location", fmt.Sprintf("%s/pulls/%d", apiRepoURL(c.base, c.repo), p.Number))
	writeJSON(w, http.StatusCreated, s.ghPull(c.base, sn.id, p))
}

// ghListPulls is "List pull requests": state (open by default; every pull
// request here is open, so closed lists none), head ("user:ref") and base
// filters, newest first (sort created, direction desc: the defaults).
func (s *Sim) ghListPulls(w http.ResponseWriter, r *http.Request, c *ghCall) {
	if _, _, ok := s.store.repoInfo(c.repo); !ok {
		writeGHError(w, http.StatusNotFound, "Not Found", c.doc)
		return
	}
	q := r.URL.Query()
	out := []ghPull{}
	if st := q.Get("state"); st == "" || st == "open" || st == "all" {
		owner, _, _ := strings.Cut(c.repo, "/")
		pulls := s.PullRequests(c.repo)
		for i := len(pulls) - 1; i >= 0; i-- {
			p := pulls[i]
			if h := q.Get("head"); h != "" && h != owner+":"+p.Head {
				continue
			}
			if b := q.Get("base"); b != "" && b != p.Base {
				continue
			}
			out = append(out, s.ghPull(c.base, int64(p.Number), p))
		}
	}
	lo, hi := s.paginate(w, r, c, len(out))
	s.writeCollection(w, r, out[lo:hi])
}

// pullPage answers a GET of a pull request's html_url with a plain page
// (the sim has no diff to show: the link a Done comment carries must open
// something); false when r is no such request.
func (s *Sim) pullPage(w http.ResponseWriter, r *http.Request) bool {
	m := pullPath.FindStringSubmatch(r.URL.Path)
	if m == nil || r.Method != http.MethodGet {
		return false
	}
	repo := m[1]
	n, err := strconv.Atoi(m[2])
	for _, p := range s.PullRequests(repo) {
		if err == nil && p.Number == n {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, "<!doctype html><title>%s #%d</title><h1>%s</h1><p>%s #%d: %s → %s, open</p><pre>%s</pre>\n",
				html.EscapeString(repo), n, html.EscapeString(p.Title), html.EscapeString(repo), n,
				html.EscapeString(p.Head), html.EscapeString(p.Base), html.EscapeString(p.Body))
			return true
		}
	}
	return false
}
