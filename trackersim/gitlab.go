package trackersim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
)

// The GitLab REST v4 endpoints the daemon (through go-gitlab) uses, served
// under /gitlab/api/v4/ so that go-gitlab's base URL is "<sim>/gitlab/api/v4/"
// (go-gitlab appends api/v4/ itself, so "<sim>/gitlab/" works too). The
// store's repo key is the project's path_with_namespace ("group/sub/project");
// :id is that path URL-encoded, or the project's numeric id
// (https://docs.gitlab.com/api/rest/#namespaced-paths).
//
// GitLab has no conditional issue update: writes are last-write-wins.
// Label names are case-sensitive (https://gitlab.com/gitlab-org/gitlab/-/merge_requests/87809)
// and issue JSON lists them sorted by title (API::Entities::IssueBasic).

const (
	glPrefix       = "/gitlab/"
	glAPI          = "/gitlab/api/v4"
	glDocsIssues   = "https://docs.gitlab.com/api/issues/"
	glDocsNotes    = "https://docs.gitlab.com/api/notes/#issues"
	glDefaultPage  = 20  // https://docs.gitlab.com/api/rest/#pagination
	glMaxPerPage   = 100 // same page
	glVersion      = "17.11.0"
	glNotFoundBody = "404 Not Found"
)

func init() {
	registerDialect(dialect{
		name:       "gitlab",
		prefix:     glPrefix,
		apiPath:    glAPI + "/",
		routes:     (*Sim).gitlabRoutes,
		deliveries: (*Sim).gitlabDeliveries,
	})
}

// glCall is the context of one authenticated GitLab request.
type glCall struct {
	repo string // path_with_namespace
	base string
	by   actor
}

type glHandler func(w http.ResponseWriter, r *http.Request, c *glCall)

func (s *Sim) gitlabRoutes(mux *http.ServeMux) {
	const issues = "/projects/{id}/issues"
	const issue = issues + "/{iid}"
	s.glRoute(mux, "GET", issues, s.glListIssues)
	s.glRoute(mux, "POST", issues, s.glCreateIssue)
	s.glRoute(mux, "GET", issue, s.glGetIssue)
	s.glRoute(mux, "PUT", issue, s.glUpdateIssue)
	s.glRoute(mux, "GET", issue+"/notes", s.glListNotes)
	s.glRoute(mux, "GET", issue+"/links", s.glLinks)
	s.glRoute(mux, "POST", issue+"/notes", s.glCreateNote)
	s.glRoute(mux, "PUT", issue+"/notes/{note}", s.glEditNote)
	s.glRoute(mux, "POST", issue+"/award_emoji", s.glAwardEmoji)
	s.glRoute(mux, "GET", issue+"/resource_label_events", s.glResourceLabelEvents)
	s.glGroupRoute(mux, "GET", "/groups/{id}/issues", s.glListGroupIssues)
	s.glGroupRoute(mux, "GET", "/groups/{id}/projects", s.glListGroupProjects)
	s.gitlabCheckRoutes(mux)
	s.gitlabHookTestRoutes(mux)
	s.gitlabPeopleRoutes(mux)
	// Unknown API paths: Grape's catch-all answer.
	mux.HandleFunc(glPrefix, func(w http.ResponseWriter, r *http.Request) {
		if s.redirectWeb(w, r) {
			return
		}
		writeJSON(w, http.StatusNotFound, map[string]string{"error": glNotFoundBody})
	})
}

// glRoute registers one endpoint; "METHOD /gitlab/api/v4<tmpl>" is also the
// Stats.Calls key.
func (s *Sim) glRoute(mux *http.ServeMux, method, tmpl string, h glHandler) {
	s.glRouteOn(mux, method, tmpl, h, s.glProject, "404 Project Not Found")
}

// glGroupRoute registers an endpoint of a group (/groups/:id/…): c.repo is
// then the group's path.
func (s *Sim) glGroupRoute(mux *http.ServeMux, method, tmpl string, h glHandler) {
	s.glRouteOn(mux, method, tmpl, h, s.glGroup, "404 Group Not Found")
}

func (s *Sim) glRouteOn(mux *http.ServeMux, method, tmpl string, h glHandler, resolve func(string) (string, bool), notFound string) {
	key := method + " " + glAPI + tmpl
	mux.HandleFunc(method+" "+glAPI+tmpl, func(w http.ResponseWriter, r *http.Request) {
		s.countCall(key)
		s.serveGitLab(w, r, h, resolve, notFound)
	})
}

// glRateHeaders writes GitLab's rate-limit headers for a spent quota that
// comes back at reset
// (https://docs.gitlab.com/administration/settings/user_and_ip_rate_limits/#response-headers).
func glRateHeaders(h http.Header, reset time.Time) {
	h.Set("RateLimit-Name", "throttle_authenticated_api")
	h.Set("RateLimit-Limit", "2000")
	h.Set("RateLimit-Observed", "2001")
	h.Set("RateLimit-Remaining", "0")
	h.Set("RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("RateLimit-ResetTime", reset.UTC().Format(http.TimeFormat))
}

func glMessage(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"message": msg})
}

func (s *Sim) serveGitLab(w http.ResponseWriter, r *http.Request, h glHandler, resolve func(string) (string, bool), notFound string) {
	w.Header().Set("X-Request-Id", s.requestID())
	w.Header().Set("X-Gitlab-Meta", `{"correlation_id":"sim","version":"1"}`)
	fault, ok := s.applyFault(r)
	if !ok {
		return
	}
	if !s.glAuthenticate(r) {
		glMessage(w, http.StatusUnauthorized, "401 Unauthorized")
		return
	}
	if fault.rateLimit {
		h := w.Header()
		if fault.shape != RateLimitGitLabBare {
			// https://docs.gitlab.com/administration/settings/user_and_ip_rate_limits/#response-headers
			h.Set("Retry-After", strconv.Itoa(fault.retryAfter))
			glRateHeaders(h, s.clock().Add(time.Duration(fault.retryAfter)*time.Second))
		}
		// RateLimitGitLabBare: gitlab.com answers some 429s with none of
		// the RateLimit-* headers and no Retry-After
		// (gitlab-org/gitlab#365728, the GraphQL API's
		// gitlab-org/gitlab#352409).
		h.Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte("Retry later\n"))
		return
	}
	if fault.throttle {
		// The quota spent on a normal answer: RateLimit-* are sent on
		// answers that were not refused too (python-gitlab/python-gitlab#1889
		// shows them on a 200 from gitlab.com's /users/:id).
		glRateHeaders(w.Header(), s.clock().Add(time.Duration(fault.retryAfter)*time.Second))
	}
	if fault.badGateway {
		h := w.Header()
		h.Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("502 Bad Gateway\n"))
		return
	}
	repo, ok := resolve(r.PathValue("id"))
	if !ok {
		glMessage(w, http.StatusNotFound, notFound)
		return
	}
	if r.Method != http.MethodGet && s.store.isArchived(repo) {
		// An archived project is read-only
		// (https://docs.gitlab.com/user/project/working_with_projects/#archive-a-project):
		// the API refuses its writes.
		glMessage(w, http.StatusForbidden, "403 Forbidden")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	h(w, r, &glCall{repo: repo, base: s.requestBase(r), by: actor{login: botLogin, writer: writerOf(r)}})
}

// glAuthenticate accepts PRIVATE-TOKEN, JOB-TOKEN or "Authorization: Bearer"
// (https://docs.gitlab.com/api/rest/authentication/).
func (s *Sim) glAuthenticate(r *http.Request) bool {
	token := r.Header.Get("PRIVATE-TOKEN")
	if token == "" {
		token = r.Header.Get("JOB-TOKEN")
	}
	if token == "" {
		token, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	if len(s.tokens) == 0 {
		return true
	}
	return token != "" && slices.Contains(s.tokens, token)
}

// glProject resolves :id (URL-decoded by the mux) to a store repo key: a
// path, matched case-insensitively as GitLab's routes are, or a numeric id.
func (s *Sim) glProject(id string) (string, bool) {
	if id == "" {
		return "", false
	}
	st := s.store
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.repos[id]; ok {
		return id, true
	}
	n, numErr := strconv.ParseInt(id, 10, 64)
	for name, r := range st.repos {
		if (numErr == nil && r.id == n) || strings.EqualFold(name, id) {
			return name, true
		}
	}
	return "", false
}

func (s *Sim) glIID(w http.ResponseWriter, r *http.Request) (int, bool) {
	n, err := strconv.Atoi(r.PathValue("iid"))
	if err != nil || n <= 0 {
		glMessage(w, http.StatusNotFound, "404 Issue Not Found")
		return 0, false
	}
	return n, true
}

func (s *Sim) glStoreError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrNotFound):
		glMessage(w, http.StatusNotFound, "404 Issue Not Found")
	case errors.Is(err, errInvalid):
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "title is missing"})
	case errors.Is(err, errLabelsRefused):
		glMessage(w, http.StatusForbidden, glRefusedMessage)
	default:
		s.log.Error("gitlab api", zap.Error(err))
		glMessage(w, http.StatusInternalServerError, "500 Internal Server Error")
	}
}

// glLabelsParam reads a labels parameter: a comma-separated string or a
// JSON array (https://docs.gitlab.com/api/issues/#edit-an-issue).
func glLabelsParam(raw json.RawMessage) ([]string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, true
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		var str string
		if err := json.Unmarshal(raw, &str); err != nil {
			return nil, false
		}
		list = strings.Split(str, ",")
	}
	out := make([]string, 0, len(list))
	for _, l := range list {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out, true
}

// glDecode reads a JSON body, or form/query values as go-gitlab and curl
// may send them, into m.
func glDecode(r *http.Request) (map[string]json.RawMessage, bool) {
	m := map[string]json.RawMessage{}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			return nil, false
		}
		return m, true
	}
	if err := r.ParseForm(); err != nil {
		return nil, false
	}
	for k, v := range r.Form {
		b, _ := json.Marshal(strings.Join(v, ","))
		m[k] = b
	}
	return m, true
}

func glString(m map[string]json.RawMessage, key string) (*string, bool) {
	raw, ok := m[key]
	if !ok || string(raw) == "null" {
		return nil, true
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, false
	}
	return &v, true
}

// glListIssues is "List project issues": state (opened, closed, all;
// default all), labels (comma-separated, all required; None and Any),
// order_by created_at|updated_at, sort asc|desc (default desc), page and
// per_page (default 20, max 100).
func (s *Sim) glListIssues(w http.ResponseWriter, r *http.Request, c *glCall) {
	all, err := s.store.list(c.repo)
	if err != nil {
		s.glStoreError(w, err)
		return
	}
	q := r.URL.Query()
	keep, ok := glIssueFilter(w, q)
	if !ok {
		return
	}
	var hits []snapshot
	for _, is := range all {
		if keep(is) {
			hits = append(hits, is)
		}
	}
	s.glWriteIssues(w, r, c, hits)
}

// glWriteIssues answers an issue list (a project's or a group's) as GitLab
// does: ordered by order_by/sort, one offset page with its headers.
func (s *Sim) glWriteIssues(w http.ResponseWriter, r *http.Request, c *glCall, hits []snapshot) {
	glSortIssues(hits, r.URL.Query())
	lo, hi := glPaginate(w, r, c.base, len(hits))
	out := make([]glIssue, 0, hi-lo)
	for _, is := range hits[lo:hi] {
		out = append(out, glIssueJSON(c.base, is))
	}
	writeJSON(w, http.StatusOK, out)
}

// glSortIssues orders issues as GitLab's list endpoints do: order_by
// created_at (default) or updated_at, sort desc (default) or asc.
func glSortIssues(hits []snapshot, q url.Values) {
	key := func(sn snapshot) time.Time { return sn.createdAt }
	if q.Get("order_by") == "updated_at" {
		key = func(sn snapshot) time.Time { return sn.updatedAt }
	}
	asc := q.Get("sort") == "asc"
	sort.SliceStable(hits, func(i, j int) bool {
		a, b := hits[i], hits[j]
		if asc {
			a, b = b, a
		}
		if ka, kb := key(a), key(b); !ka.Equal(kb) {
			return ka.After(kb)
		}
		return a.id > b.id
	})
}

func glHasLabels(sn snapshot, want []string) bool {
	names := sn.labelNames()
	for _, l := range want {
		switch {
		case l == "None":
			if len(names) > 0 {
				return false
			}
		case l == "Any":
			if len(names) == 0 {
				return false
			}
		case !slices.Contains(names, l):
			return false
		}
	}
	return true
}

// glPaginate applies page/per_page and sets GitLab's offset pagination
// headers (https://docs.gitlab.com/api/rest/#pagination-link-header and
// #other-pagination-headers).
func glPaginate(w http.ResponseWriter, r *http.Request, base string, total int) (lo, hi int) {
	q := r.URL.Query()
	per := glDefaultPage
	if v, err := strconv.Atoi(q.Get("per_page")); err == nil && v > 0 {
		per = min(v, glMaxPerPage)
	}
	page := 1
	if v, err := strconv.Atoi(q.Get("page")); err == nil && v > 0 {
		page = v
	}
	pages := max((total+per-1)/per, 1)
	h := w.Header()
	h.Set("X-Page", strconv.Itoa(page))
	h.Set("X-Per-Page", strconv.Itoa(per))
	h.Set("X-Total", strconv.Itoa(total))
	h.Set("X-Total-Pages", strconv.Itoa(pages))
	h.Set("X-Next-Page", "")
	h.Set("X-Prev-Page", "")
	link := func(p int, rel string) string {
		q.Set("page", strconv.Itoa(p))
		q.Set("per_page", strconv.Itoa(per))
		return fmt.Sprintf(`<%s%s?%s>; rel="%s"`, base, r.URL.EscapedPath(), q.Encode(), rel)
	}
	var links []string
	if page > 1 {
		h.Set("X-Prev-Page", strconv.Itoa(min(page-1, pages)))
		links = append(links, link(min(page-1, pages), "prev"))
	}
	if page < pages {
		h.Set("X-Next-Page", strconv.Itoa(page+1))
		links = append(links, link(page+1, "next"))
	}
	links = append(links, link(1, "first"), link(pages, "last"))
	h.Set("Link", strings.Join(links, ", "))
	lo = min((page-1)*per, total)
	return lo, min(lo+per, total)
}

func (s *Sim) glGetIssue(w http.ResponseWriter, r *http.Request, c *glCall) {
	n, ok := s.glIID(w, r)
	if !ok {
		return
	}
	sn, err := s.store.get(c.repo, n)
	if err != nil {
		s.glStoreError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, glIssueJSON(c.base, sn))
}

// glCreateIssue is "New issue": title (required), description, labels.
func (s *Sim) glCreateIssue(w http.ResponseWriter, r *http.Request, c *glCall) {
	m, ok := glDecode(r)
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "400 Bad request"})
		return
	}
	title, ok1 := glString(m, "title")
	desc, ok2 := glString(m, "description")
	labels, ok3 := glLabelsParam(m["labels"])
	if !ok1 || !ok2 || !ok3 || title == nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "title is missing"})
		return
	}
	body := ""
	if desc != nil {
		body = *desc
	}
	sn, err := s.store.create(c.repo, *title, body, labels, c.by, true)
	if err != nil {
		s.glStoreError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, glIssueJSON(c.base, sn))
}

// glUpdateIssue is "Edit an issue": title, description, state_event
// (close, reopen), labels (replace), add_labels, remove_labels. Removing a
// label the issue lacks is not an error. There is no precondition: the last
// write wins.
func (s *Sim) glUpdateIssue(w http.ResponseWriter, r *http.Request, c *glCall) {
	n, ok := s.glIID(w, r)
	if !ok {
		return
	}
	m, ok := glDecode(r)
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "400 Bad request"})
		return
	}
	known := 0
	for _, k := range []string{"title", "description", "state_event", "labels", "add_labels", "remove_labels",
		"assignee_ids", "milestone_id", "confidential", "due_date", "weight", "discussion_locked", "issue_type"} {
		if _, ok := m[k]; ok {
			known++
		}
	}
	if known == 0 {
		// Grape's at_least_one_of validation on "Edit an issue".
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "title, description, state_event, labels, " +
			"add_labels, remove_labels, ... are missing, at least one parameter must be provided"})
		return
	}
	var u update
	var okT, okD, okS, okL, okA, okR bool
	u.Title, okT = glString(m, "title")
	u.Body, okD = glString(m, "description")
	stateEvent, okS := glString(m, "state_event")
	labels, okL := glLabelsParam(m["labels"])
	add, okA := glLabelsParam(m["add_labels"])
	remove, okR := glLabelsParam(m["remove_labels"])
	if !okT || !okD || !okS || !okL || !okA || !okR {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "400 Bad request"})
		return
	}
	if _, set := m["labels"]; set {
		u.Labels = &labels
	}
	if stateEvent != nil {
		switch *stateEvent {
		case "close", "reopen":
			open := *stateEvent == "reopen"
			u.Open = &open
		default:
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "state_event does not have a valid value"})
			return
		}
	}
	u.Add = add
	// One store write, so the label change is atomic in the sim; the remove
	// list is filtered under the store's lock via the precondition hook.
	sn, err := s.glApply(c, n, remove, u)
	if err != nil {
		s.glStoreError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, glIssueJSON(c.base, sn))
}

// glApply applies u after dropping from remove the labels the issue lacks
// (GitLab ignores those), retrying if the issue changed in between so the
// filtering and the write see the same label set.
func (s *Sim) glApply(c *glCall, n int, remove []string, u update) (snapshot, error) {
	for {
		cur, err := s.store.get(c.repo, n)
		if err != nil {
			return snapshot{}, err
		}
		names := cur.labelNames()
		u.Remove = nil
		for _, l := range remove {
			if slices.Contains(names, l) {
				u.Remove = append(u.Remove, l)
			}
		}
		v := cur.version
		sn, _, err := s.store.apply(c.repo, n, func(now int64) bool { return now == v }, c.by, u)
		if errors.Is(err, ErrPreconditionFailed) {
			continue // someone wrote between our read and write; GitLab has no such window
		}
		return sn, err
	}
}

// glListNotes is "List project issue notes" (sort default desc by created_at).
func (s *Sim) glListNotes(w http.ResponseWriter, r *http.Request, c *glCall) {
	n, ok := s.glIID(w, r)
	if !ok {
		return
	}
	sn, err := s.store.get(c.repo, n)
	if err != nil {
		s.glStoreError(w, err)
		return
	}
	cs := slices.Clone(sn.comments)
	if r.URL.Query().Get("sort") != "asc" {
		slices.Reverse(cs)
	}
	lo, hi := glPaginate(w, r, c.base, len(cs))
	out := make([]glNote, 0, hi-lo)
	for _, cm := range cs[lo:hi] {
		out = append(out, glNoteJSON(c.base, sn, cm))
	}
	writeJSON(w, http.StatusOK, out)
}

// glCreateNote is "Create new issue note": body (required). Its quick
// actions run first (gitlab_quickactions.go).
func (s *Sim) glCreateNote(w http.ResponseWriter, r *http.Request, c *glCall) {
	n, ok := s.glIID(w, r)
	if !ok {
		return
	}
	body, ok := glNoteBody(w, r)
	if !ok {
		return
	}
	if body, ok = s.glNoteWithQuickActions(w, c, n, body); !ok {
		return
	}
	sn, id, err := s.store.apply(c.repo, n, nil, c.by, update{Comment: &body})
	if err != nil {
		s.glStoreError(w, err)
		return
	}
	for _, cm := range sn.comments {
		if cm.id == id {
			writeJSON(w, http.StatusCreated, glNoteJSON(c.base, sn, cm))
			return
		}
	}
}

// JSON shapes (https://docs.gitlab.com/api/issues/#single-project-issue,
// https://docs.gitlab.com/api/notes/).

type glUser struct {
	ID        int64  `json:"id"`
	Username  string `json:"username"`
	Name      string `json:"name"`
	State     string `json:"state"`
	AvatarURL string `json:"avatar_url"`
	WebURL    string `json:"web_url"`
}

type glIssue struct {
	ID                   int64             `json:"id"`
	IID                  int               `json:"iid"`
	ProjectID            int64             `json:"project_id"`
	Title                string            `json:"title"`
	Description          string            `json:"description"`
	State                string            `json:"state"`
	CreatedAt            string            `json:"created_at"`
	UpdatedAt            string            `json:"updated_at"`
	ClosedAt             *string           `json:"closed_at"`
	ClosedBy             *glUser           `json:"closed_by"`
	Labels               []string          `json:"labels"`
	Milestone            any               `json:"milestone"`
	Assignees            []glUser          `json:"assignees"`
	Author               glUser            `json:"author"`
	Type                 string            `json:"type"`
	IssueType            string            `json:"issue_type"`
	Assignee             *glUser           `json:"assignee"`
	UserNotesCount       int               `json:"user_notes_count"`
	MergeRequestsCount   int               `json:"merge_requests_count"`
	Upvotes              int               `json:"upvotes"`
	Downvotes            int               `json:"downvotes"`
	DueDate              *string           `json:"due_date"`
	Confidential         bool              `json:"confidential"`
	DiscussionLocked     *bool             `json:"discussion_locked"`
	WebURL               string            `json:"web_url"`
	References           map[string]string `json:"references"`
	Severity             string            `json:"severity"`
	Links                map[string]string `json:"_links"`
	TaskCompletionStatus map[string]int    `json:"task_completion_status"`
}

type glNote struct {
	ID           int64   `json:"id"`
	Type         *string `json:"type"`
	Body         string  `json:"body"`
	Attachment   *string `json:"attachment"`
	Author       glUser  `json:"author"`
	CreatedAt    string  `json:"created_at"`
	UpdatedAt    string  `json:"updated_at"`
	System       bool    `json:"system"`
	NoteableID   int64   `json:"noteable_id"`
	NoteableType string  `json:"noteable_type"`
	ProjectID    int64   `json:"project_id"`
	NoteableIID  int     `json:"noteable_iid"`
	Resolvable   bool    `json:"resolvable"`
	Confidential bool    `json:"confidential"`
	Internal     bool    `json:"internal"`
}

// glTime is the API's timestamp format, e.g. "2016-01-04T15:31:51.081Z".
func glTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func glUserJSON(base, login string) glUser {
	return glUser{ID: userID(login), Username: login, Name: login, State: "active",
		AvatarURL: "https://www.gravatar.com/avatar/0?s=80&d=identicon", WebURL: base + "/gitlab/" + login}
}

// glWebURL is the issue's page: <instance>/<path>/-/issues/<iid>.
func glWebURL(base, repo string, iid int) string {
	return fmt.Sprintf("%s/gitlab/%s/-/issues/%d", base, repo, iid)
}

// glSortedLabels is the issue's label names sorted by title, as GitLab
// serialises them.
func glSortedLabels(sn snapshot) []string {
	names := sn.labelNames()
	sort.Strings(names)
	return names
}

func glIssueJSON(base string, sn snapshot) glIssue {
	api := fmt.Sprintf("%s%s/projects/%d", base, glAPI, sn.repoID)
	out := glIssue{ID: sn.id, IID: sn.number, ProjectID: sn.repoID, Title: sn.title, Description: sn.body,
		State: "opened", CreatedAt: glTime(sn.createdAt), UpdatedAt: glTime(sn.updatedAt),
		Labels: glSortedLabels(sn), Assignees: []glUser{}, Author: glUserJSON(base, sn.author),
		Type: "ISSUE", IssueType: "issue", UserNotesCount: len(sn.comments),
		WebURL: glWebURL(base, sn.repo, sn.number), Severity: "UNKNOWN",
		References: map[string]string{"short": fmt.Sprintf("#%d", sn.number),
			"relative": fmt.Sprintf("#%d", sn.number), "full": fmt.Sprintf("%s#%d", sn.repo, sn.number)},
		Links: map[string]string{"self": fmt.Sprintf("%s/issues/%d", api, sn.number),
			"notes": fmt.Sprintf("%s/issues/%d/notes", api, sn.number), "project": api,
			"award_emoji": fmt.Sprintf("%s/issues/%d/award_emoji", api, sn.number)},
		TaskCompletionStatus: map[string]int{"count": 0, "completed_count": 0}}
	if !sn.open {
		out.State = "closed"
		t := glTime(sn.closedAt)
		out.ClosedAt = &t
		if sn.closedBy != "" {
			u := glUserJSON(base, sn.closedBy)
			out.ClosedBy = &u
		}
	}
	return out
}

func glNoteJSON(base string, sn snapshot, cm comment) glNote {
	return glNote{ID: cm.id, Body: cm.body, Author: glUserJSON(base, cm.author), CreatedAt: glTime(cm.at),
		UpdatedAt: glTime(cm.updated()), NoteableID: sn.id, NoteableType: "Issue", ProjectID: sn.repoID,
		NoteableIID: sn.number}
}

// glNoteBody decodes a note's body for a create or an edit and answers
// GitLab's 400 for a missing or blank one.
func glNoteBody(w http.ResponseWriter, r *http.Request) (string, bool) {
	m, ok := glDecode(r)
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "400 Bad request"})
		return "", false
	}
	body, ok := glString(m, "body")
	if !ok || body == nil || strings.TrimSpace(*body) == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body is missing"})
		return "", false
	}
	return *body, true
}

// glIssueFilter reads an issue list's state (opened, closed, all; default
// all) and labels (all required) parameters, shared by the project and
// group lists, answering 400 for a state GitLab does not know.
func glIssueFilter(w http.ResponseWriter, q url.Values) (func(snapshot) bool, bool) {
	state := q.Get("state")
	switch state {
	case "", "all", "opened", "closed":
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "state does not have a valid value"})
		return nil, false
	}
	want, _ := glLabelsParam(json.RawMessage(strconv.Quote(q.Get("labels"))))
	return func(is snapshot) bool {
		return !(state == "opened" && !is.open) && !(state == "closed" && is.open) && glHasLabels(is, want)
	}, true
}
