package trackersim

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.uber.org/zap"
)

// The Jira dialect: the REST endpoints platforms/jira sends through go-jira,
// served under /jira/ so the client's base URL is "<sim>/jira/". Both REST
// versions are served: v3 is Jira Cloud's (ADF rich text, search through
// /search/jql with nextPageToken), v2 Data Center's (plain text, search with
// startAt/maxResults/total). A Jira project is a store repository named by
// its key ("PROJ"); issue n of it is "PROJ-n".
//
// Jira has no conditional write: a label update is last-write-wins, so the
// daemon guards it with a Redis lock. The sim applies one request's label
// operations atomically and in order, and that is all.

// Jira's search page sizes. Data Center's default is 50 (and its cap 1000);
// Cloud's search/jql returns at most 100 issues per page when fields are
// requested. The sim caps both at 100 so tests page with few issues.
const (
	jiraDefaultMaxResults = 50
	jiraMaxResults        = 100
)

const (
	// jiraSearchRemoved is what Jira Cloud answers on the removed search
	// endpoint (HTTP 410), https://developer.atlassian.com/changelog/#CHANGE-2046.
	jiraSearchRemoved = "The requested API has been removed. Please migrate to the /rest/api/3/search/jql API. A full migration guideline is available at https://developer.atlassian.com/changelog/#CHANGE-2046"
	jiraIssueMissing  = "Issue does not exist or you do not have permission to see it."
)

func init() {
	registerDialect(dialect{
		name:       "jira",
		prefix:     "/jira/",
		routes:     (*Sim).jiraRoutes,
		deliveries: (*Sim).jiraDeliveries,
	})
}

// jiraCall is the context of one authenticated Jira request.
type jiraCall struct {
	base    string // scheme://host
	version string // "2" or "3"
	by      actor
}

type jiraHandler func(w http.ResponseWriter, r *http.Request, c *jiraCall)

func (s *Sim) jiraRoutes(mux *http.ServeMux) {
	const issue = "/rest/api/{v}/issue/{key}"
	s.jiraRoute(mux, "GET", issue, s.jiraGetIssue)
	s.jiraRoute(mux, "PUT", issue, s.jiraEditIssue)
	s.jiraRoute(mux, "GET", issue+"/editmeta", s.jiraEditMeta)
	s.jiraRoute(mux, "GET", issue+"/changelog", s.jiraGetChangelogs)
	s.jiraRoute(mux, "POST", issue+"/comment", s.jiraAddComment)
	s.jiraRoute(mux, "PUT", issue+"/comment/{comment}", s.jiraEditComment)
	s.jiraRoute(mux, "GET", "/rest/api/{v}/search", s.jiraSearch)
	s.jiraRoute(mux, "GET", "/rest/api/{v}/search/jql", s.jiraSearchJQL)
	s.jiraCheckRoutes(mux)
	s.jiraRoute(mux, "POST", "/rest/api/{v}/search/jql", s.jiraSearchJQL)
	mux.HandleFunc("/jira/", func(w http.ResponseWriter, r *http.Request) {
		if s.redirectWeb(w, r) {
			return
		}
		jiraError(w, http.StatusNotFound, "null for uri: the trackersim's Jira dialect has no such endpoint")
	})
}

// jiraRoute registers one endpoint; "METHOD /jira<tmpl>" is its Stats.Calls
// key.
func (s *Sim) jiraRoute(mux *http.ServeMux, method, tmpl string, h jiraHandler) {
	key := method + " /jira" + tmpl
	mux.HandleFunc(key, func(w http.ResponseWriter, r *http.Request) {
		s.countCall(key)
		fault, ok := s.applyFault(r)
		if !ok {
			return
		}
		switch {
		case fault.rateLimit:
			// Jira Cloud's rate limit answers
			// (https://developer.atlassian.com/cloud/jira/platform/rate-limiting/,
			// quoted in JRACLOUD-69262): a 429 "may be accompanied by
			// Retry-After and X-RateLimit-Reset", the latter an ISO 8601
			// timestamp "yyyy-MM-ddTHH:mmZ" (request time + Retry-After); "a
			// 503 response may be returned when a resource limit has been
			// reached", with Retry-After.
			reset := s.clock().Add(time.Duration(fault.retryAfter) * time.Second)
			switch fault.shape {
			case RateLimitJira503:
				w.Header().Set("Retry-After", strconv.Itoa(fault.retryAfter))
				jiraError(w, http.StatusServiceUnavailable, "Service Unavailable")
				return
			case RateLimitJiraReset:
				// The minute form truncates the seconds.
				w.Header().Set("X-RateLimit-Reset", reset.UTC().Format("2006-01-02T15:04Z"))
				w.Header().Set("RateLimit-Reason", "jira-burst-based")
			default:
				w.Header().Set("Retry-After", strconv.Itoa(fault.retryAfter))
			}
			jiraError(w, http.StatusTooManyRequests, "Rate limit exceeded.")
			return
		case fault.badGateway:
			jiraError(w, http.StatusBadGateway, "Bad Gateway")
			return
		}
		if !s.jiraAuthenticate(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="protected-area"`)
			jiraError(w, http.StatusUnauthorized, "You are not authenticated. Authentication required to perform this operation.")
			return
		}
		v := r.PathValue("v")
		switch v {
		case "2", "3":
		case "latest":
			v = "2"
		default:
			jiraError(w, http.StatusNotFound, "null for uri: unknown REST API version "+v)
			return
		}
		w.Header().Set("X-AREQUESTID", s.requestID())
		h(w, r, &jiraCall{base: s.requestBase(r), version: v, by: actor{login: botLogin, writer: writerOf(r)}})
	})
}

// jiraAuthenticate accepts Cloud's basic auth (e-mail and API token; the
// token is checked) and Data Center's bearer personal access token.
func (s *Sim) jiraAuthenticate(r *http.Request) bool {
	token := ""
	if _, pw, ok := r.BasicAuth(); ok {
		token = pw
	} else if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		token = strings.TrimSpace(t)
	}
	return len(s.tokens) == 0 || (token != "" && slices.Contains(s.tokens, token))
}

func jiraError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, jiraErrors{ErrorMessages: []string{msg}, Errors: map[string]string{}})
}

func jiraFieldError(w http.ResponseWriter, field, msg string) {
	writeJSON(w, http.StatusBadRequest, jiraErrors{ErrorMessages: []string{}, Errors: map[string]string{field: msg}})
}

// jiraIssueRef resolves {key} ("PROJ-12") to the store's repository and
// number; anything else is Jira's 404.
func jiraIssueRef(w http.ResponseWriter, r *http.Request) (repo string, number int, ok bool) {
	key := r.PathValue("key")
	i := strings.LastIndexByte(key, '-')
	if i > 0 {
		if n, err := strconv.Atoi(key[i+1:]); err == nil && n > 0 {
			return key[:i], n, true
		}
	}
	jiraError(w, http.StatusNotFound, jiraIssueMissing)
	return "", 0, false
}

func (s *Sim) jiraStoreError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrNotFound):
		jiraError(w, http.StatusNotFound, jiraIssueMissing)
	case errors.Is(err, errInvalid):
		jiraFieldError(w, "summary", "You must specify a summary of the issue.")
	case errors.Is(err, errLabelsRefused):
		jiraFieldError(w, "labels", jiraRefusedLabels)
	default:
		s.log.Error("jira api", zap.Error(err))
		jiraError(w, http.StatusInternalServerError, "Internal server error")
	}
}

// jiraGetIssue: GET /rest/api/{2|3}/issue/{issueIdOrKey}?fields=…
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/#api-rest-api-3-issue-issueidorkey-get).
func (s *Sim) jiraGetIssue(w http.ResponseWriter, r *http.Request, c *jiraCall) {
	repo, n, ok := jiraIssueRef(w, r)
	if !ok {
		return
	}
	sn, err := s.store.get(repo, n)
	if err != nil {
		s.jiraStoreError(w, err)
		return
	}
	s.jiraWriteIssue(w, r, c, sn, jiraFieldSet(r.URL.Query().Get("fields")))
}

// jiraWriteIssue answers 200 with sn as Get issue returns it: the fields
// of want (nil: every field), the changelog when expand asks for it.
func (s *Sim) jiraWriteIssue(w http.ResponseWriter, r *http.Request, c *jiraCall, sn snapshot, want map[string]bool) {
	is := jiraIssueOf(c.base, c.version, sn, want)
	if want == nil || want["issuelinks"] {
		is.Fields["issuelinks"] = s.jiraIssueLinks(c.base, c.version, sn.repo, sn.number)
	}
	if slices.Contains(strings.Split(r.URL.Query().Get("expand"), ","), "changelog") {
		writeJSON(w, http.StatusOK, struct {
			jiraIssue
			Changelog map[string]any `json:"changelog"`
		}{is, s.jiraChangelogOf(c.base, sn.repo, sn.number)})
		return
	}
	writeJSON(w, http.StatusOK, is)
}

// jiraLabelOp is one element of update.labels: {"add": x}, {"remove": x} or
// {"set": [x, …]}.
type jiraLabelOp struct {
	Add    *string   `json:"add"`
	Remove *string   `json:"remove"`
	Set    *[]string `json:"set"`
}

// jiraEditIssue: PUT /rest/api/{2|3}/issue/{issueIdOrKey}
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/#api-rest-api-3-issue-issueidorkey-put). Only labels are
// editable here, through fields.labels (replace) or update.labels (add,
// remove, set, applied in order; removing an absent label and adding a
// present one are no-ops). 204 No Content; no conditional form exists.
// Jira Cloud's edit takes returnIssue ("Whether the response should
// contain the issue with fields edited in this request. The returned issue
// will have the same format as in the Get issue API") and expand ("The Get
// issue API expand parameter to use in the response if the returnIssue
// parameter is true"), and then answers "200 … if the request is
// successful and the returnIssue parameter is true" (the v3 reference
// above; Atlassian's OpenAPI document of the issues group, operation
// editIssue). The sim serves it on a Cloud site (SetJiraDeployment) over
// REST v3 and answers with every field, as Get issue without fields does.
// That is a reading, not an observation: "the issue with fields edited in
// this request" may also mean only the edited fields, and no client
// library, issue thread or forum post shows a live answer's body
// (searched 2026-11-27). platforms/jira takes an answer lacking a field it
// reads as not whole and the consumer reads the ticket (5 calls a ticket,
// not 4); TestLiveCloudWriteAnswersWhole settles it on a live site.
// Data Center's edit has no such parameter and answers "204 No Content"
// whatever the query (developer.atlassian.com/server/jira/platform/
// jira-rest-api-example-edit-issues-6291632; jira.js's server editIssue,
// generated from the Data Center reference, takes no returnIssue and
// returns nothing); the sim's REST v2 is Data Center's, so it ignores the
// parameter there too.
func (s *Sim) jiraEditIssue(w http.ResponseWriter, r *http.Request, c *jiraCall) {
	repo, n, ok := jiraIssueRef(w, r)
	if !ok {
		return
	}
	var req struct {
		Fields map[string]json.RawMessage `json:"fields"`
		Update map[string]json.RawMessage `json:"update"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&req); err != nil {
		jiraError(w, http.StatusBadRequest, "Unexpected character or end of input: the request body is not valid JSON")
		return
	}
	for _, m := range []map[string]json.RawMessage{req.Fields, req.Update} {
		for field := range m {
			if field != "labels" {
				jiraFieldError(w, field, jiraNotOnScreen(field))
				return
			}
		}
	}
	var ops []jiraLabelOp
	if raw, ok := req.Fields["labels"]; ok {
		var set []string
		if err := json.Unmarshal(raw, &set); err != nil {
			jiraFieldError(w, "labels", "Field 'labels' expects an array of strings.")
			return
		}
		ops = append(ops, jiraLabelOp{Set: &set})
	}
	if raw, ok := req.Update["labels"]; ok {
		var more []jiraLabelOp
		if err := json.Unmarshal(raw, &more); err != nil {
			jiraFieldError(w, "labels", "Operation value must be an array of operations such as {\"add\": \"label\"}.")
			return
		}
		ops = append(ops, more...)
	}
	for _, op := range ops {
		var names []string
		switch {
		case op.Add != nil:
			names = []string{*op.Add}
		case op.Remove != nil:
			names = []string{*op.Remove}
		case op.Set != nil:
			names = *op.Set
		default:
			jiraFieldError(w, "labels", "Unsupported operation: want add, remove or set.")
			return
		}
		for _, l := range names {
			if msg := jiraLabelProblem(l); msg != "" {
				jiraFieldError(w, "labels", msg)
				return
			}
		}
	}
	// One request is atomic: read, apply the operations in order, write
	// conditional on the version read, and start over if another write got
	// in between.
	for {
		sn, err := s.store.get(repo, n)
		if err != nil {
			s.jiraStoreError(w, err)
			return
		}
		// The Edit screen and the status decide (jira_screens.go).
		if len(ops) > 0 && !s.jiraEditable(sn)["labels"] {
			jiraFieldError(w, "labels", jiraNotOnScreen("labels"))
			return
		}
		labels := applyJiraLabelOps(sn.labelNames(), ops)
		want := sn.version
		after, _, err := s.store.apply(repo, n, func(v int64) bool { return v == want }, c.by, update{Labels: &labels})
		if errors.Is(err, ErrPreconditionFailed) {
			continue
		}
		if err != nil {
			s.jiraStoreError(w, err)
			return
		}
		if r.URL.Query().Get("returnIssue") == "true" && c.version == "3" && !s.jiraDataCenter() {
			s.jiraWriteIssue(w, r, c, after, nil)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
}

// jiraLabelProblem is Jira's complaint about a label, or "".
func jiraLabelProblem(l string) string {
	switch {
	case l == "":
		return "Label cannot be empty."
	case strings.ContainsFunc(l, unicode.IsSpace):
		return fmt.Sprintf("The label '%s' contains spaces which is invalid.", l)
	case len([]rune(l)) > 255:
		return "The label must not exceed 255 characters."
	}
	return ""
}

func applyJiraLabelOps(labels []string, ops []jiraLabelOp) []string {
	out := slices.Clone(labels)
	for _, op := range ops {
		switch {
		case op.Add != nil:
			if !slices.Contains(out, *op.Add) {
				out = append(out, *op.Add)
			}
		case op.Remove != nil:
			out = slices.DeleteFunc(out, func(l string) bool { return l == *op.Remove })
		case op.Set != nil:
			out = dedupe(*op.Set)
		}
	}
	return out
}

// jiraAddComment: POST /rest/api/{2|3}/issue/{issueIdOrKey}/comment
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-comments/#api-rest-api-3-issue-issueidorkey-comment-post). v3 takes the body as an ADF document,
// v2 as a string; 201 with the comment.
func (s *Sim) jiraAddComment(w http.ResponseWriter, r *http.Request, c *jiraCall) {
	repo, n, ok := jiraIssueRef(w, r)
	if !ok {
		return
	}
	raw, text, ok := jiraCommentBody(w, r, c)
	if !ok {
		return
	}
	sn, id, err := s.store.apply(repo, n, nil, c.by, update{Comment: &text})
	if err != nil {
		s.jiraStoreError(w, err)
		return
	}
	ids := strconv.FormatInt(id, 10)
	writeJSON(w, http.StatusCreated, jiraComment{
		Self: c.base + "/jira/rest/api/" + c.version + "/issue/" + strconv.FormatInt(sn.id, 10) + "/comment/" + ids,
		ID:   ids, Author: jiraUserOf(c.base, c.by.login), Body: raw,
		Created: jiraTime(sn.updatedAt), Updated: jiraTime(sn.updatedAt),
	})
}

// jiraQuery parses and runs jql over its project, reading each issue
// through view. ok is false when the answer (400) has been written.
func (s *Sim) jiraQuery(w http.ResponseWriter, jql string, view func([]snapshot) []snapshot) (matches []snapshot, ok bool) {
	q, err := parseJQL(jql)
	if err != nil {
		jiraError(w, http.StatusBadRequest, fmt.Sprintf("Error in the JQL Query: %v; %s.", err, jqlSupported))
		return nil, false
	}
	jiraRepos := s.jiraProjectKeys()
	for _, v := range q.projects() {
		if _, ok := jiraRepos[strings.ToLower(v)]; !ok {
			jiraError(w, http.StatusBadRequest, fmt.Sprintf("The value '%s' does not exist for the field 'project'.", v))
			return nil, false
		}
	}
	var all []snapshot
	if keys, ok := q.onlyProjects(); ok {
		// The query pins its projects: read only theirs.
		names := make([]string, 0, len(keys))
		for _, k := range keys {
			names = append(names, jiraRepos[strings.ToLower(k)])
		}
		slices.Sort(names)
		for _, n := range slices.Compact(names) {
			l, _ := s.store.list(n)
			all = append(all, l...)
		}
	} else {
		// Every project of the site. The store holds every dialect's
		// repositories; Jira's are the ones named by a project key (no
		// "/"), in key order as ORDER BY key wants.
		for _, sn := range s.store.all() {
			if !strings.Contains(sn.repo, "/") {
				all = append(all, sn)
			}
		}
	}
	if view != nil {
		all = view(all)
	}
	for _, sn := range all {
		if q.matches(sn) {
			matches = append(matches, sn)
		}
	}
	if q.descending {
		slices.Reverse(matches)
	}
	return matches, true
}

// jiraPageSize reads maxResults (default jiraDefaultMaxResults, at most
// jiraMaxResults).
func jiraPageSize(w http.ResponseWriter, v string) (int, bool) {
	size := jiraDefaultMaxResults
	if v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			jiraError(w, http.StatusBadRequest, fmt.Sprintf("The maxResults parameter %q is not a valid number.", v))
			return 0, false
		}
		size = n
	}
	return min(size, jiraMaxResults), true
}

// jiraSearch: GET /rest/api/2/search, Data Center's offset-paged search
// (https://docs.atlassian.com/software/jira/docs/api/REST/9.12.0/#api/2/search-search):
// startAt, maxResults, total. Jira Cloud removed it (410 on v3 here). It is
// consistent: it has no reconcileIssues and needs none (jira_index.go).
func (s *Sim) jiraSearch(w http.ResponseWriter, r *http.Request, c *jiraCall) {
	if c.version == "3" {
		jiraError(w, http.StatusGone, jiraSearchRemoved)
		return
	}
	size, ok := jiraPageSize(w, r.URL.Query().Get("maxResults"))
	if !ok {
		return
	}
	start := 0
	if v := r.URL.Query().Get("startAt"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			jiraError(w, http.StatusBadRequest, fmt.Sprintf("The startAt parameter %q is not a valid number.", v))
			return
		}
		start = n
	}
	matches, ok := s.jiraQuery(w, r.URL.Query().Get("jql"), nil)
	if !ok {
		return
	}
	lo, hi := min(start, len(matches)), min(start+size, len(matches))
	writeJSON(w, http.StatusOK, map[string]any{
		"expand": "schema,names", "startAt": start, "maxResults": size, "total": len(matches),
		"issues": s.jiraIssues(c, r.URL.Query().Get("fields"), matches[lo:hi]),
	})
}

// jqlSearch is a search/jql request, from GET's query or POST's body.
type jqlSearch struct {
	JQL           string   `json:"jql"`
	NextPageToken string   `json:"nextPageToken"`
	MaxResults    *int     `json:"maxResults"`
	Fields        []string `json:"fields"`
	// ReconcileIssues are issue ids (numbers) to read consistently.
	ReconcileIssues []int64 `json:"reconcileIssues"`
}

// jqlSearchOf reads a search/jql request. GET takes reconcileIssues as a
// comma-separated or repeated query parameter, POST as a JSON array
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-search/#api-rest-api-3-search-jql-post).
func jqlSearchOf(w http.ResponseWriter, r *http.Request) (jqlSearch, bool) {
	var req jqlSearch
	if r.Method == http.MethodPost {
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&req); err != nil {
			jiraError(w, http.StatusBadRequest, "The request body is not valid JSON: "+err.Error())
			return req, false
		}
	} else {
		q := r.URL.Query()
		req.JQL, req.NextPageToken = q.Get("jql"), q.Get("nextPageToken")
		if v := q.Get("maxResults"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				jiraError(w, http.StatusBadRequest, fmt.Sprintf("The maxResults parameter %q is not a valid number.", v))
				return req, false
			}
			req.MaxResults = &n
		}
		if f := q.Get("fields"); f != "" {
			req.Fields = strings.Split(f, ",")
		}
		for _, v := range q["reconcileIssues"] {
			for _, id := range strings.Split(v, ",") {
				n, err := strconv.ParseInt(strings.TrimSpace(id), 10, 64)
				if err != nil {
					jiraError(w, http.StatusBadRequest, fmt.Sprintf("The reconcileIssues value %q is not an issue id.", id))
					return req, false
				}
				req.ReconcileIssues = append(req.ReconcileIssues, n)
			}
		}
	}
	// The documented limit is 50 ids; the wording of Jira's refusal is
	// not documented, this one is the sim's.
	if len(req.ReconcileIssues) > jiraMaxReconcile {
		jiraError(w, http.StatusBadRequest, fmt.Sprintf("reconcileIssues accepts at most %d issue ids, got %d.", jiraMaxReconcile, len(req.ReconcileIssues)))
		return req, false
	}
	return req, true
}

// jiraSearchJQL: GET and POST /rest/api/3/search/jql, Cloud's token-paged,
// eventually consistent search
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-search/#api-rest-api-3-search-jql-get): nextPageToken and isLast,
// no total, reconcileIssues. The token is opaque to clients; here it
// encodes the offset.
func (s *Sim) jiraSearchJQL(w http.ResponseWriter, r *http.Request, c *jiraCall) {
	req, ok := jqlSearchOf(w, r)
	if !ok {
		return
	}
	maxResults := ""
	if req.MaxResults != nil {
		maxResults = strconv.Itoa(*req.MaxResults)
	}
	size, ok := jiraPageSize(w, maxResults)
	if !ok {
		return
	}
	if size == 0 {
		size = jiraDefaultMaxResults
	}
	start := 0
	if tok := req.NextPageToken; tok != "" {
		b, err := base64.RawURLEncoding.DecodeString(tok)
		n, err2 := strconv.Atoi(strings.TrimPrefix(string(b), "offset:"))
		if err != nil || err2 != nil || n < 0 || !strings.HasPrefix(string(b), "offset:") {
			jiraError(w, http.StatusBadRequest, "The provided next page token is invalid or expired.")
			return
		}
		start = n
	}
	reconcile := make(map[int64]bool, len(req.ReconcileIssues))
	for _, id := range req.ReconcileIssues {
		reconcile[id] = true
	}
	matches, ok := s.jiraQuery(w, req.JQL, func(all []snapshot) []snapshot { return s.jiraSearchView(all, reconcile) })
	if !ok {
		return
	}
	lo, hi := min(start, len(matches)), min(start+size, len(matches))
	out := map[string]any{"issues": s.jiraIssues(c, strings.Join(req.Fields, ","), matches[lo:hi]), "isLast": hi >= len(matches)}
	if hi < len(matches) {
		out["nextPageToken"] = base64.RawURLEncoding.EncodeToString([]byte("offset:" + strconv.Itoa(hi)))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Sim) jiraIssues(c *jiraCall, fields string, sns []snapshot) []jiraIssue {
	want := jiraFieldSet(fields)
	out := make([]jiraIssue, len(sns))
	for i, sn := range sns {
		out[i] = jiraIssueOf(c.base, c.version, sn, want)
		out[i].Expand = ""
	}
	return out
}

// jiraCommentBody reads a comment's body as Add and Update take it: an ADF
// document on v3, a string on v2. It answers the request itself when the
// body is not valid.
func jiraCommentBody(w http.ResponseWriter, r *http.Request, c *jiraCall) (json.RawMessage, string, bool) {
	var req struct {
		Body json.RawMessage `json:"body"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&req); err != nil {
		jiraError(w, http.StatusBadRequest, "Unexpected character or end of input: the request body is not valid JSON")
		return nil, "", false
	}
	var text string
	if c.version == "3" {
		var doc adfNode
		if err := json.Unmarshal(req.Body, &doc); err != nil {
			jiraFieldError(w, "comment", "Comment body is not valid! Operation value must be an Atlassian Document (see the Atlassian Document Format).")
			return nil, "", false
		}
		t, valid := jiraADFText(doc)
		if !valid {
			jiraFieldError(w, "comment", "Comment body is not valid! INVALID_INPUT")
			return nil, "", false
		}
		text = t
	} else if err := json.Unmarshal(req.Body, &text); err != nil {
		jiraFieldError(w, "comment", "Comment body is not valid! Expected a string.")
		return nil, "", false
	}
	if strings.TrimSpace(text) == "" {
		jiraFieldError(w, "comment", "Comment body can not be empty!")
		return nil, "", false
	}
	return req.Body, text, true
}
