package trackersim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ghMaxCommentChars is GitHub's largest issue comment body.
const ghMaxCommentChars = 65536

// The GitHub REST endpoints the daemon (through go-github) uses, served under
// /github/ so that go-github's BaseURL is "<sim>/github/". Each handler
// documents the GitHub page whose behaviour it follows.

const (
	docsIssues   = "https://docs.github.com/rest/issues/issues"
	docsComments = "https://docs.github.com/rest/issues/comments"
	docsLabels   = "https://docs.github.com/rest/issues/labels"
	docsRepos    = "https://docs.github.com/rest/repos/repos#get-a-repository"
)

func (s *Sim) githubRoutes(mux *http.ServeMux) {
	const issue = "/repos/{owner}/{repo}/issues/{number}"
	s.ghRoute(mux, "GET", "/repos/{owner}/{repo}", docsRepos, false, s.ghGetRepo)
	s.ghRoute(mux, "GET", "/repos/{owner}/{repo}/issues", docsIssues+"#list-repository-issues", false, s.ghListIssues)
	s.ghRoute(mux, "POST", "/repos/{owner}/{repo}/issues", docsIssues+"#create-an-issue", false, s.ghCreateIssue)
	s.ghRoute(mux, "GET", issue, docsIssues+"#get-an-issue", false, s.ghGetIssue)
	s.ghRoute(mux, "PATCH", issue, docsIssues+"#update-an-issue", false, s.ghUpdateIssue)
	s.ghRoute(mux, "GET", issue+"/comments", docsComments+"#list-issue-comments", false, s.ghListComments)
	s.ghRoute(mux, "POST", issue+"/comments", docsComments+"#create-an-issue-comment", false, s.ghCreateComment)
	s.ghRoute(mux, "PATCH", "/repos/{owner}/{repo}/issues/comments/{id}", docsComments+"#update-an-issue-comment", false, s.ghEditComment)
	s.ghRoute(mux, "POST", issue+"/reactions", docsReactions, false, s.ghCreateReaction)
	s.ghRoute(mux, "GET", issue+"/dependencies/blocked_by", "https://docs.github.com/rest/issues/issue-dependencies", false, s.ghBlockedBy)
	s.ghRoute(mux, "GET", issue+"/labels", docsLabels+"#list-labels-for-an-issue", false, s.ghListIssueLabels)
	s.ghRoute(mux, "POST", issue+"/labels", docsLabels+"#add-labels-to-an-issue", false, s.ghAddLabels)
	s.ghRoute(mux, "PUT", issue+"/labels", docsLabels+"#set-labels-for-an-issue", false, s.ghSetLabels)
	s.ghRoute(mux, "DELETE", issue+"/labels", docsLabels+"#remove-all-labels-from-an-issue", false, s.ghRemoveAllLabels)
	s.ghRoute(mux, "DELETE", issue+"/labels/{name}", docsLabels+"#remove-a-label-from-an-issue", false, s.ghRemoveLabel)
	s.ghRoute(mux, "GET", "/repos/{owner}/{repo}/labels", docsLabels+"#list-labels-for-a-repository", false, s.ghListRepoLabels)
	s.ghRoute(mux, "POST", "/repos/{owner}/{repo}/labels", docsLabels+"#create-a-label", false, s.ghCreateLabel)
	s.ghRoute(mux, "GET", "/repos/{owner}/{repo}/labels/{name}", docsLabels+"#get-a-label", false, s.ghGetLabel)
	s.ghRoute(mux, "PATCH", "/repos/{owner}/{repo}/labels/{name}", docsLabels+"#update-a-label", false, s.ghUpdateLabel)
	// GET /rate_limit does not count against the limit
	// (https://docs.github.com/rest/rate-limit/rate-limit#get-rate-limit-status-for-the-authenticated-user).
	s.ghRoute(mux, "GET", "/rate_limit", "https://docs.github.com/rest/rate-limit/rate-limit", true, s.ghRateLimit)
	s.githubCheckRoutes(mux)
	s.githubHookTestRoutes(mux)
	s.githubPullRoutes(mux)
	s.githubAppRoutes(mux)
	s.githubSearchRoutes(mux)
	s.githubGraphQLRoutes(mux)
	s.githubRepoListRoutes(mux)
	mux.HandleFunc("/github/repositories/{id}/{rest...}", s.ghRepositoryByID(mux))
	mux.HandleFunc("/github/", func(w http.ResponseWriter, r *http.Request) {
		if s.redirectWeb(w, r) || s.pullPage(w, r) {
			return
		}
		writeGHError(w, http.StatusNotFound, "Not Found", docsREST)
	})
}

func (s *Sim) ghGetRepo(w http.ResponseWriter, r *http.Request, c *ghCall) {
	id, created, ok := s.store.repoInfo(c.repo)
	if !ok {
		writeGHError(w, http.StatusNotFound, "Not Found", c.doc)
		return
	}
	out := s.ghRepo(c.base, c.repo, id, created)
	out.Archived = s.store.isArchived(c.repo)
	out.Permissions = s.ghPermissions(w, r)
	if issues, err := s.store.list(c.repo); err == nil {
		for _, is := range issues {
			if is.open {
				out.OpenIssuesCount++
			}
		}
	}
	s.writeCollection(w, r, out)
}

// ghListIssues follows "List repository issues": state (default open),
// labels (comma-separated, all required), since, sort (created, updated,
// comments; default created), direction (default desc), per_page and page.
func (s *Sim) ghListIssues(w http.ResponseWriter, r *http.Request, c *ghCall) {
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	if state != "open" && state != "closed" && state != "all" {
		writeJSON(w, http.StatusUnprocessableEntity, ghError{Message: "Validation Failed", DocumentationURL: c.doc,
			Errors: []ghFieldError{{Resource: "Issue", Field: "state", Code: "invalid"}}})
		return
	}
	var want []string
	for _, l := range strings.Split(q.Get("labels"), ",") {
		if l = strings.TrimSpace(l); l != "" {
			want = append(want, l)
		}
	}
	var since time.Time
	if v := q.Get("since"); v != "" {
		var err error
		if since, err = time.Parse(time.RFC3339, v); err != nil {
			writeJSON(w, http.StatusUnprocessableEntity, ghError{Message: "Validation Failed", DocumentationURL: c.doc,
				Errors: []ghFieldError{{Resource: "Issue", Field: "since", Code: "invalid"}}})
			return
		}
	}
	creator := q.Get("creator")
	hits, err := s.store.listWhere(c.repo, func(is *issue) bool {
		return !((state == "open" && !is.open) || (state == "closed" && is.open) ||
			(creator != "" && is.author != creator) || is.updatedAt.Before(since) || !containsAll(is.labels, want))
	})
	if err != nil {
		s.writeStoreError(w, c, err)
		return
	}
	sortIssues(hits, q.Get("sort"), q.Get("direction"))
	lo, hi := s.paginate(w, r, c, len(hits))
	out := make([]ghIssue, 0, hi-lo)
	for _, is := range hits[lo:hi] {
		out = append(out, s.ghIssue(c.base, is))
	}
	s.writeCollection(w, r, out)
}

// containsAll reports whether names holds every label of want, compared
// case-insensitively: the sim's reading of the labels filter, since GitHub
// documents no case rule for it and a repository has one label per name in
// any case (platforms.SameLabel).
func containsAll(names, want []string) bool {
	for _, w := range want {
		if !slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, w) }) {
			return false
		}
	}
	return true
}

func hasAll(sn snapshot, want []string) bool {
	names := sn.labelNames()
	for _, w := range want {
		found := false
		for _, n := range names {
			if n == w {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func sortIssues(is []snapshot, by, direction string) {
	key := func(s snapshot) time.Time { return s.createdAt }
	var less func(a, b snapshot) bool
	switch by {
	case "updated":
		key = func(s snapshot) time.Time { return s.updatedAt }
	case "comments":
		less = func(a, b snapshot) bool {
			if len(a.comments) != len(b.comments) {
				return len(a.comments) < len(b.comments)
			}
			return a.number < b.number
		}
	}
	if less == nil {
		less = func(a, b snapshot) bool {
			ka, kb := key(a), key(b)
			if !ka.Equal(kb) {
				return ka.Before(kb)
			}
			return a.number < b.number
		}
	}
	asc := direction == "asc"
	sort.SliceStable(is, func(i, j int) bool {
		if asc {
			return less(is[i], is[j])
		}
		return less(is[j], is[i])
	})
}

// paginate applies per_page/page to a collection of total items and sets
// GitHub's Link header (rel prev, next, last, first)
// (https://docs.github.com/en/rest/using-the-rest-api/using-pagination-in-the-rest-api).
func (s *Sim) paginate(w http.ResponseWriter, r *http.Request, c *ghCall, total int) (lo, hi int) {
	q := r.URL.Query()
	per := s.perPage
	if v, err := strconv.Atoi(q.Get("per_page")); err == nil && v > 0 {
		per = min(v, MaxPerPage)
	}
	page := 1
	if v, err := strconv.Atoi(q.Get("page")); err == nil && v > 0 {
		page = v
	}
	last := max((total+per-1)/per, 1)
	link := func(p int, rel string) string {
		q.Set("page", strconv.Itoa(p))
		return fmt.Sprintf(`<%s%s?%s>; rel="%s"`, c.base, r.URL.EscapedPath(), q.Encode(), rel)
	}
	var links []string
	if page > 1 {
		links = append(links, link(min(page-1, last), "prev"))
	}
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	lo = min((page-1)*per, total)
	return lo, min(lo+per, total)
}

// writeCollection answers a GET with an ETag over the body and honours
// If-None-Match with 304.
func (s *Sim) writeCollection(w http.ResponseWriter, r *http.Request, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeGHError(w, http.StatusInternalServerError, "Server Error", docsREST)
		return
	}
	etag := bodyETag(body)
	s.writeWithETag(w, r, etag, body, http.StatusOK)
}

// writeWithETag sends body with etag scoped to the request's token
// (tokenETag) and answers a matching If-None-Match on a GET with 304.
func (s *Sim) writeWithETag(w http.ResponseWriter, r *http.Request, etag string, body []byte, code int) {
	etag = s.requestETag(r, etag)
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "private, max-age=60, s-maxage=60")
	w.Header().Set("Vary", "Accept, Authorization, Cookie, X-GitHub-OTP")
	if inm := r.Header.Get("If-None-Match"); r.Method == http.MethodGet && inm != "" && etagMatches(inm, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(body)
	_, _ = w.Write([]byte("\n"))
}

func (s *Sim) writeIssue(w http.ResponseWriter, r *http.Request, c *ghCall, sn snapshot, code int) {
	body, err := json.Marshal(s.ghIssue(c.base, sn))
	if err != nil {
		writeGHError(w, http.StatusInternalServerError, "Server Error", c.doc)
		return
	}
	w.Header().Set("Last-Modified", sn.updatedAt.UTC().Format(http.TimeFormat))
	s.writeWithETag(w, r, issueETag(sn), body, code)
}

func (s *Sim) ghGetIssue(w http.ResponseWriter, r *http.Request, c *ghCall) {
	n, ok := issueNumber(w, r, c)
	if !ok {
		return
	}
	sn, err := s.store.get(c.repo, n)
	if err != nil {
		s.writeStoreError(w, c, err)
		return
	}
	s.writeIssue(w, r, c, sn, http.StatusOK)
}

func (s *Sim) ghCreateIssue(w http.ResponseWriter, r *http.Request, c *ghCall) {
	var req struct {
		Title  any             `json:"title"`
		Body   *string         `json:"body"`
		Labels json.RawMessage `json:"labels"`
	}
	if !decodeJSON(w, r, c, &req) {
		return
	}
	title := ""
	switch t := req.Title.(type) {
	case string:
		title = t
	case float64: // GitHub accepts a number as title
		title = strconv.FormatFloat(t, 'f', -1, 64)
	}
	labels, ok := parseLabelList(req.Labels)
	if !ok {
		writeGHError(w, http.StatusBadRequest, "Problems parsing JSON", c.doc)
		return
	}
	if ghLabelTooLong(w, c, labels...) {
		return
	}
	body := ""
	if req.Body != nil {
		body = *req.Body
	}
	sn, err := s.store.create(c.repo, title, body, labels, c.by, true)
	if err != nil {
		s.writeStoreError(w, c, err)
		return
	}
	w.Header().Set("Location", fmt.Sprintf("%s/issues/%d", apiRepoURL(c.base, c.repo), sn.number))
	s.writeIssue(w, r, c, sn, http.StatusCreated)
}

// ghUpdateIssue is PATCH "Update an issue": title, body, state
// (open/closed), state_reason and labels (the full new set). If-Match is
// handled as the dialect's IfMatchMode says (github_etag.go): by default a
// weak validator is refused with 400, and no mode refuses a stale strong one
// without writing, because GitHub was never seen to.
func (s *Sim) ghUpdateIssue(w http.ResponseWriter, r *http.Request, c *ghCall) {
	n, ok := issueNumber(w, r, c)
	if !ok {
		return
	}
	var req struct {
		Title       *string         `json:"title"`
		Body        *string         `json:"body"`
		State       *string         `json:"state"`
		StateReason *string         `json:"state_reason"`
		Labels      json.RawMessage `json:"labels"`
	}
	if !decodeJSON(w, r, c, &req) {
		return
	}
	u := update{Title: req.Title, Body: req.Body, StateReason: req.StateReason}
	if req.State != nil {
		switch *req.State {
		case "open", "closed":
			open := *req.State == "open"
			u.Open = &open
		default:
			writeJSON(w, http.StatusUnprocessableEntity, ghError{Message: "Validation Failed", DocumentationURL: c.doc,
				Errors: []ghFieldError{{Resource: "Issue", Field: "state", Code: "invalid"}}})
			return
		}
	}
	if len(req.Labels) > 0 && string(req.Labels) != "null" {
		labels, ok := parseLabelList(req.Labels)
		if !ok {
			writeGHError(w, http.StatusBadRequest, "Problems parsing JSON", c.doc)
			return
		}
		if ghLabelTooLong(w, c, labels...) {
			return
		}
		u.Labels = &labels
	}
	sn, _, ok := s.applyWrite(w, r, c, n, u)
	if !ok {
		return
	}
	s.writeIssue(w, r, c, sn, http.StatusOK)
}

func (s *Sim) ghListComments(w http.ResponseWriter, r *http.Request, c *ghCall) {
	n, ok := issueNumber(w, r, c)
	if !ok {
		return
	}
	sn, err := s.store.get(c.repo, n)
	if err != nil {
		s.writeStoreError(w, c, err)
		return
	}
	var since time.Time
	if v := r.URL.Query().Get("since"); v != "" {
		since, _ = time.Parse(time.RFC3339, v)
	}
	var cs []comment
	for _, cm := range sn.comments {
		if !cm.at.Before(since) {
			cs = append(cs, cm)
		}
	}
	lo, hi := s.paginate(w, r, c, len(cs))
	out := make([]ghComment, 0, hi-lo)
	for _, cm := range cs[lo:hi] {
		out = append(out, s.ghComment(c.base, sn, cm))
	}
	s.writeCollection(w, r, out)
}

func (s *Sim) ghCreateComment(w http.ResponseWriter, r *http.Request, c *ghCall) {
	n, ok := issueNumber(w, r, c)
	if !ok {
		return
	}
	body, ok := ghCommentBody(w, r, c)
	if !ok {
		return
	}
	sn, id, ok := s.applyWrite(w, r, c, n, update{Comment: &body})
	if !ok {
		return
	}
	for _, cm := range sn.comments {
		if cm.id == id {
			out := s.ghComment(c.base, sn, cm)
			w.Header().Set("Location", out.URL)
			writeJSON(w, http.StatusCreated, out)
			return
		}
	}
}

func (s *Sim) ghRateLimit(w http.ResponseWriter, r *http.Request, _ *ghCall) {
	token, _ := s.authenticate(r)
	b := s.rate.get(token, s.clock(), s.rateLimit)
	s.rate.mu.Lock()
	core := map[string]any{"limit": s.rateLimit, "used": b.used, "remaining": max(s.rateLimit-b.used, 0),
		"reset": b.reset.Unix(), "resource": "core"}
	s.rate.mu.Unlock()
	sb := s.searchRate.get(token, s.clock(), DefaultGitHubSearchRateLimit)
	s.searchRate.mu.Lock()
	search := map[string]any{"limit": DefaultGitHubSearchRateLimit, "used": sb.used, "remaining": max(DefaultGitHubSearchRateLimit-sb.used, 0),
		"reset": sb.reset.Unix(), "resource": "search"}
	s.searchRate.mu.Unlock()
	gb := s.graphqlRate.get(token, s.clock(), s.graphqlLimit)
	s.graphqlRate.mu.Lock()
	graphql := map[string]any{"limit": s.graphqlLimit, "used": gb.used, "remaining": max(s.graphqlLimit-gb.used, 0),
		"reset": gb.reset.Unix(), "resource": "graphql"}
	s.graphqlRate.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"resources": map[string]any{"core": core, "search": search, "graphql": graphql}, "rate": core})
}

// ghCommentBody decodes a comment's {"body"} for a create or an edit and
// answers GitHub's 422 for a missing, empty or too long body.
func ghCommentBody(w http.ResponseWriter, r *http.Request, c *ghCall) (string, bool) {
	var req struct {
		Body *string `json:"body"`
	}
	if !decodeJSON(w, r, c, &req) {
		return "", false
	}
	if req.Body == nil || *req.Body == "" {
		writeJSON(w, http.StatusUnprocessableEntity, ghError{Message: "Validation Failed", DocumentationURL: c.doc,
			Errors: []ghFieldError{{Resource: "IssueComment", Field: "body", Code: "missing_field"}}})
		return "", false
	}
	// GitHub refuses bodies over 65,536 characters with this 422
	// (jmikedupont2/ai-ticket#51, telia-oss/github-pr-resource#259).
	if utf8.RuneCountInString(*req.Body) > ghMaxCommentChars {
		writeJSON(w, http.StatusUnprocessableEntity, ghError{Message: "Validation Failed", DocumentationURL: c.doc,
			Errors: []ghFieldError{{Resource: "IssueComment", Field: "data", Code: "unprocessable",
				Message: fmt.Sprintf("Body is too long (maximum is %d characters)", ghMaxCommentChars)}}})
		return "", false
	}
	return *req.Body, true
}
