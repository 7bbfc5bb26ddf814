package trackersim

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
)

// The Azure DevOps (Boards) REST endpoints azure-devops-go-api v7 calls for
// the daemon, served under /ado/ so that an organization's URL is
// "<sim>/ado/{org}" (https://dev.azure.com/{org} on the real service). The
// store's repo key is "org/project"; organization and project names are
// matched case-insensitively, as Azure DevOps does. A work item's id is its
// issue number in the store, so ids are unique per project here, not per
// organization as on the real service.
//
// The SDK discovers its routes before the first call: OPTIONS {org}/_apis
// lists every resource's route template and API versions (adoLocations),
// and GET {org}/_apis/ResourceAreas names each area's base URL.
//
// Conditional writes: a JSON Patch document whose "test /rev" operation
// does not match the work item's current rev is refused as a whole with 412
// Precondition Failed and VS403351 (the status observed on the live
// service, see microsoft/azure-devops-mcp#1526; details in ado_tags.go).
// Every change of a work item (tags, state, title, description, comment)
// increments its rev by one. System.Tags follows the service's JSON Patch
// semantics, not RFC 6902's: "add" merges (ado_tags.go).
//
// Docs: https://learn.microsoft.com/rest/api/azure/devops/wit/ (Work Items
// - Get Work Item, Update, Get Work Items Batch; Wiql - Query By Wiql;
// Comments - Add Work Item Comment).

const (
	adoPrefix = "/ado/"
	// adoBatchMax is the most ids one workitemsbatch request may name.
	adoBatchMax = 200
	// adoWiqlMax is the most work items a WIQL query may return.
	adoWiqlMax = 20000
	// adoBasicUser is the user name the sim's service hooks send with basic
	// authentication; the password is the hook's secret.
	adoBasicUser = "agentsmith"
)

// Open and closed states of the Basic process the sim's work items follow.
const (
	adoStateOpen   = "To Do"
	adoStateClosed = "Done"
)

// adoClosedStates are the states that close a work item when written.
var adoClosedStates = []string{"Done", "Closed", "Removed", "Resolved"}

func init() {
	registerDialect(dialect{
		name:       "ado",
		prefix:     adoPrefix,
		routes:     (*Sim).adoRoutes,
		deliveries: (*Sim).adoDeliveries,
	})
}

// adoCall is the context of one authenticated Azure DevOps request.
type adoCall struct {
	org  string // as the URL spells it
	repo string // store key, "" for organization-level routes
	base string // "<scheme>://<host>/ado/<org>"
	by   actor
}

type adoHandler func(w http.ResponseWriter, r *http.Request, c *adoCall)

func (s *Sim) adoRoutes(mux *http.ServeMux) {
	const org = adoPrefix + "{org}"
	const proj = org + "/{project}/_apis/wit"
	s.adoRoute(mux, "OPTIONS", org+"/_apis", false, s.adoOptions)
	s.adoRoute(mux, "GET", org+"/_apis/ResourceAreas", false, s.adoResourceAreas)
	s.adoRoute(mux, "GET", org+"/_apis/ResourceAreas/{areaId}", false, s.adoResourceAreas)
	s.adoRoute(mux, "GET", proj+"/workItems/{id}", true, s.adoGetWorkItem)
	s.adoRoute(mux, "PATCH", proj+"/workItems/{id}", true, s.adoUpdateWorkItem)
	s.adoRoute(mux, "GET", proj+"/workItems/{id}/updates", true, s.adoWorkItemUpdates)
	s.adoRoute(mux, "POST", proj+"/workItemsBatch", true, s.adoWorkItemsBatch)
	s.adoRoute(mux, "POST", proj+"/wiql", true, s.adoQueryByWiql)
	// The project is optional in both: an organisation-level query spans
	// its projects, and the batch reads items of any of them
	// (https://learn.microsoft.com/rest/api/azure/devops/wit/wiql/query-by-wiql,
	// .../wit/work-items/get-work-items-batch: "project: Project ID or
	// project name", optional).
	s.adoRoute(mux, "POST", org+"/_apis/wit/wiql", false, s.adoQueryByWiql)
	s.adoRoute(mux, "POST", org+"/_apis/wit/workItemsBatch", false, s.adoWorkItemsBatch)
	s.adoRoute(mux, "POST", proj+"/workItems/{id}/comments", true, s.adoAddComment)
	s.adoRoute(mux, "PATCH", proj+"/workItems/{id}/comments/{comment}", true, s.adoUpdateComment)
	s.adoRoute(mux, "GET", proj+"/tags", true, s.adoListTags)
	s.adoRoute(mux, "GET", org+"/_apis/permissions/{namespace}/{permissions}", false, s.adoHasPermissions)
	s.adoCheckRoutes(mux)
	s.adoHookTestRoutes(mux)
	mux.HandleFunc(adoPrefix, func(w http.ResponseWriter, r *http.Request) {
		if s.redirectWeb(w, r) {
			return
		}
		adoError(w, http.StatusNotFound, "NotFoundException",
			fmt.Sprintf("The controller for path '%s' was not found or does not implement IController.", r.URL.Path))
	})
}

// adoRoute registers one endpoint under its template (also the Stats.Calls
// key) and, where it differs, under the lower-case spelling the
// documentation uses: Azure DevOps routes are case-insensitive.
func (s *Sim) adoRoute(mux *http.ServeMux, method, tmpl string, project bool, h adoHandler) {
	key := method + " " + tmpl
	handler := func(w http.ResponseWriter, r *http.Request) {
		s.countCall(key)
		s.serveADO(w, r, project, h)
	}
	mux.HandleFunc(method+" "+tmpl, handler)
	if lower := adoLowerLiterals(tmpl); lower != tmpl {
		mux.HandleFunc(method+" "+lower, handler)
	}
}

// adoLowerLiterals lower-cases a template's literal segments.
func adoLowerLiterals(tmpl string) string {
	segs := strings.Split(tmpl, "/")
	for i, seg := range segs {
		if !strings.HasPrefix(seg, "{") {
			segs[i] = strings.ToLower(seg)
		}
	}
	return strings.Join(segs, "/")
}

// adoErrorBody is the shape of every Azure DevOps API error (the SDK's
// azuredevops.WrappedError).
type adoErrorBody struct {
	ID             string  `json:"$id"`
	InnerException *string `json:"innerException"`
	Message        string  `json:"message"`
	TypeName       string  `json:"typeName"`
	TypeKey        string  `json:"typeKey"`
	// CustomProperties carry a refusal's details (the rule errors of
	// TF401320, the permission bits of an AccessCheckException).
	CustomProperties map[string]any `json:"customProperties,omitempty"`
	ErrorCode        int            `json:"errorCode"`
	EventID          int            `json:"eventId"`
}

// adoRateHeaders writes Azure DevOps' rate-limit headers for a request
// delayed by delay whose TSTU usage drains by reset
// (https://learn.microsoft.com/azure/devops/integrate/concepts/rate-limits#api-client-experience).
func adoRateHeaders(h http.Header, delay time.Duration, reset time.Time) {
	h.Set("X-RateLimit-Resource", "ATCPU")
	h.Set("X-RateLimit-Delay", strconv.FormatFloat(delay.Seconds(), 'f', 3, 64))
	h.Set("X-RateLimit-Limit", "200")
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
}

func adoError(w http.ResponseWriter, code int, typeKey, msg string) {
	writeJSON(w, code, adoErrorBody{ID: "1", Message: msg, TypeKey: typeKey, EventID: 3000,
		TypeName: "Microsoft.TeamFoundation.WorkItemTracking.Server." + typeKey + ", Microsoft.TeamFoundation.WorkItemTracking.Server"})
}

func (s *Sim) serveADO(w http.ResponseWriter, r *http.Request, project bool, h adoHandler) {
	w.Header().Set("ActivityId", s.requestID())
	fault, ok := s.applyFault(r)
	if !ok {
		return
	}
	if !s.adoAuthenticate(r) {
		adoRefuse(w, r)
		return
	}
	if fault.rateLimit {
		// Blocked: 429 with Retry-After
		// (https://learn.microsoft.com/azure/devops/integrate/concepts/rate-limits#api-client-experience).
		w.Header().Set("Retry-After", strconv.Itoa(fault.retryAfter))
		adoRateHeaders(w.Header(), 0, s.clock().Add(time.Duration(fault.retryAfter)*time.Second))
		adoError(w, http.StatusTooManyRequests, "RequestBlockedException",
			"TF400733: The request has been blocked: the user has exceeded the usage limit.")
		return
	}
	if fault.throttle {
		// Delayed, not blocked: over its TSTU budget Azure DevOps holds the
		// request ("from a few milliseconds per request up to 30 seconds")
		// and then serves it, 200, with X-RateLimit-Remaining 0 and the
		// delay in X-RateLimit-Delay; the usage returns to 0 within five
		// minutes of stopping (same page, "Global consumption limit").
		if fault.throttleDelay > 0 {
			t := time.NewTimer(fault.throttleDelay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		adoRateHeaders(w.Header(), fault.throttleDelay, s.clock().Add(5*time.Minute))
	}
	if fault.badGateway {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html><body><h1>502 Bad Gateway</h1></body></html>\n"))
		return
	}
	if r.Method != http.MethodOptions && adoAPIVersion(r) == "" {
		adoError(w, http.StatusBadRequest, "VssVersionNotSpecifiedException", fmt.Sprintf(
			"No api-version was supplied for the %q request. The version must be supplied either as part of the Accept header (e.g. \"application/json; api-version=1.0\") or as a query parameter (e.g. \"?api-version=1.0\").", r.Method))
		return
	}
	org := r.PathValue("org")
	// The identity the token authenticates as (Access.Login, default
	// BotLogin) makes the change: it is the work item's System.AuthorizedAs
	// and a comment's createdBy, whatever ChangedBy the update writes.
	c := &adoCall{org: org, base: s.requestBase(r) + adoPrefix + url.PathEscape(org),
		by: actor{login: s.requestAccess(r).Login, writer: writerOf(r)}}
	if project {
		name := r.PathValue("project")
		repo, ok := s.adoRepo(org, name)
		if !ok {
			adoError(w, http.StatusNotFound, "ProjectDoesNotExistWithNameException",
				fmt.Sprintf("TF200016: The following project does not exist: %s. Verify that the name of the project is correct and that the project exists on the specified Azure DevOps Server.", name))
			return
		}
		c.repo = repo
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	h(w, r, c)
}

// adoSignInPage is the start of the page Azure DevOps Services answers a
// refused credential with on GET and POST.
const adoSignInPage = `<!DOCTYPE html><html><head><title>Azure DevOps Services | Sign In</title></head>` +
	`<body><a href="https://app.vssps.visualstudio.com/_signin">Sign in</a></body></html>`

// adoRefuse answers a request whose credential adoAuthenticate refused, as
// the service does. A wrong, expired or wrongly encoded PAT on a GET or
// POST gets 203 Non-Authoritative Information with an HTML sign-in page,
// while a PATCH with the same credential gets 401 TF400813
// (microsoft/azure-devops-auth-samples#52: "different from a POST and GET
// request where we receive a 203 status code when the access token is
// expired"; MicrosoftDocs/vsts-rest-api-specs#97 and #574 report the 203
// sign-in page for a mis-encoded PAT). A request with no credential at all
// keeps the 401.
func adoRefuse(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" && (r.Method == http.MethodGet || r.Method == http.MethodPost) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNonAuthoritativeInfo)
		_, _ = w.Write([]byte(adoSignInPage))
		return
	}
	adoError(w, http.StatusUnauthorized, "UnauthorizedRequestException",
		"TF400813: The user '' is not authorized to access this resource.")
}

// adoAuthenticate accepts a personal access token as the basic-auth
// password (any user name), or as a bearer token
// (https://learn.microsoft.com/azure/devops/organizations/accounts/use-personal-access-tokens-to-authenticate).
func (s *Sim) adoAuthenticate(r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	token := ""
	if b, ok := strings.CutPrefix(auth, "Basic "); ok {
		if raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b)); err == nil {
			_, token, _ = strings.Cut(string(raw), ":")
		}
	} else if t, ok := strings.CutPrefix(auth, "Bearer "); ok {
		token = strings.TrimSpace(t)
	}
	if len(s.tokens) == 0 {
		return true
	}
	return token != "" && slices.Contains(s.tokens, token)
}

// adoAPIVersion is the api-version of the query or the Accept header.
func adoAPIVersion(r *http.Request) string {
	if v := r.URL.Query().Get("api-version"); v != "" {
		return v
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ";") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "api-version="); ok {
			return v
		}
	}
	return ""
}

// adoRepo resolves an organization and project to a store key,
// case-insensitively.
func (s *Sim) adoRepo(org, project string) (string, bool) {
	want := org + "/" + project
	st := s.store
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.repos[want]; ok {
		return want, true
	}
	for name := range st.repos {
		if strings.EqualFold(name, want) {
			return name, true
		}
	}
	return "", false
}

// adoOrgRepos lists the store keys of an organization's projects.
func (s *Sim) adoOrgRepos(org string) []string {
	st := s.store
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []string
	for name := range st.repos {
		if o, _, ok := strings.Cut(name, "/"); ok && strings.EqualFold(o, org) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func adoWorkItemID(w http.ResponseWriter, r *http.Request) (int, bool) {
	n, err := strconv.Atoi(r.PathValue("id"))
	if err != nil || n <= 0 {
		adoError(w, http.StatusBadRequest, "ArgumentException", fmt.Sprintf("The value '%s' is not valid for id.", r.PathValue("id")))
		return 0, false
	}
	return n, true
}

func (s *Sim) adoStoreError(w http.ResponseWriter, id int, err error) {
	switch {
	case errors.Is(err, ErrNotFound):
		adoError(w, http.StatusNotFound, "WorkItemUnauthorizedAccessException",
			fmt.Sprintf("TF401232: Work item %d does not exist, or you do not have permissions to read it.", id))
	case errors.Is(err, ErrPreconditionFailed):
		// The work item API maps WorkItemRevisionMismatchException (TF26071)
		// to 409; a failed "test /rev" is 412 instead (adoTestFailed).
		adoError(w, http.StatusConflict, "WorkItemRevisionMismatchException",
			"TF26071: This work item has been changed by someone else since you opened it. You will need to refresh it and discard your changes.")
	case errors.Is(err, errInvalid):
		adoError(w, http.StatusBadRequest, "RuleValidationException", "TF401320: Rule Error for field Title. Error code: Required, InvalidEmpty.")
	case errors.Is(err, errLabelsRefused):
		adoError(w, http.StatusBadRequest, "RuleValidationException", adoRefusedMessage)
	default:
		s.log.Error("ado api", zap.Error(err))
		adoError(w, http.StatusInternalServerError, "InternalServerError", "Internal server error")
	}
}

// adoGetWorkItem is "Work Items - Get Work Item": fields (comma-separated)
// limits the fields, $expand adds links or relations.
func (s *Sim) adoGetWorkItem(w http.ResponseWriter, r *http.Request, c *adoCall) {
	id, ok := adoWorkItemID(w, r)
	if !ok {
		return
	}
	sn, err := s.store.get(c.repo, id)
	if err != nil {
		s.adoStoreError(w, id, err)
		return
	}
	q := r.URL.Query()
	var fields []string
	if f := q.Get("fields"); f != "" {
		fields = strings.Split(f, ",")
	}
	expand := strings.ToLower(q.Get("$expand"))
	if fields != nil && expand != "" && expand != "none" {
		adoError(w, http.StatusBadRequest, "ConflictingParametersException", "The expand parameter can not be used with the fields parameter.")
		return
	}
	wi := adoWorkItemJSON(c.base, sn, fields, fields == nil || expand == "links" || expand == "all")
	if expand == "relations" || expand == "all" {
		wi.Relations = s.adoRelations(c.base, c.repo, sn.number)
	}
	writeJSON(w, http.StatusOK, wi)
}

// adoPatchOp is one JSON Patch operation (RFC 6902) as Work Items - Update
// takes them.
type adoPatchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	From  string          `json:"from"`
	Value json.RawMessage `json:"value"`
}

// adoUpdateWorkItem is "Work Items - Update": a JSON Patch document
// (Content-Type application/json-patch+json) applied all or nothing. The
// sim supports "test /rev" and add/replace/remove of System.Tags,
// System.Title, System.Description and System.State; anything else is 400.
// Tags follow the service's own semantics (ado_tags.go): "add" merges.
func (s *Sim) adoUpdateWorkItem(w http.ResponseWriter, r *http.Request, c *adoCall) {
	id, ok := adoWorkItemID(w, r)
	if !ok {
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json-patch+json") {
		adoError(w, http.StatusUnsupportedMediaType, "VssRequestContentTypeNotSupportedException", fmt.Sprintf(
			"The request indicated a Content-Type of %q for method type \"PATCH\" which is not supported. Valid content types for this method are: application/json-patch+json.", ct))
		return
	}
	var ops []adoPatchOp
	if err := json.NewDecoder(r.Body).Decode(&ops); err != nil || len(ops) == 0 {
		adoError(w, http.StatusBadRequest, "VssPropertyValidationException", "You must pass a valid patch document in the body of the request.")
		return
	}
	var (
		fields    update // every field but the tags, which depend on the current ones
		tagOps    []adoTagOp
		wantRev   *int
		changedBy string // the System.ChangedBy the document writes
	)
	for _, op := range ops {
		field, isField := strings.CutPrefix(op.Path, "/fields/")
		switch {
		case op.Op == "test" && op.Path == "/rev":
			rev, ok := adoInt(op.Value)
			if !ok {
				adoError(w, http.StatusBadRequest, "VssPropertyValidationException", "The value of the test operation on /rev must be a number.")
				return
			}
			wantRev = &rev
		case (op.Op == "add" || op.Op == "replace" || op.Op == "remove") && isField:
			var v string
			if op.Op != "remove" {
				if err := json.Unmarshal(op.Value, &v); err != nil {
					adoError(w, http.StatusBadRequest, "VssPropertyValidationException", fmt.Sprintf("The value for field %s must be a string.", field))
					return
				}
			}
			switch {
			case strings.EqualFold(field, "System.Tags"):
				tagOps = append(tagOps, adoTagOp{op: op.Op, value: v})
			case strings.EqualFold(field, "System.ChangedBy"):
				changedBy = v
			case strings.EqualFold(field, "System.History"):
				if v != "" {
					fields.Comment = &v
				}
			case !adoSetField(&fields, field, v):
				adoError(w, http.StatusBadRequest, "WorkItemFieldInvalidException", fmt.Sprintf(
					"TF51535: Cannot find field %s. (The sim supports System.Tags, System.Title, System.Description, System.State, System.History and System.ChangedBy.)", field))
				return
			}
		default:
			adoError(w, http.StatusBadRequest, "VssPropertyValidationException", fmt.Sprintf(
				"The sim does not support the operation %q on path %q (supported: test /rev; add, replace, remove /fields/...).", op.Op, op.Path))
			return
		}
	}
	by := c.by
	if changedBy != "" && adoBypassRules(r) {
		by.changedBy = adoLoginOf(changedBy)
	}
	// The document is applied to the work item as it is when the service
	// reads it: the tags are computed from the current ones and written only
	// if the item did not change meanwhile (rev and version change
	// together). Without "test /rev" a write that lost that race is simply
	// recomputed, as the service serialises saves of one work item itself.
	for try := 0; ; try++ {
		cur, err := s.store.get(c.repo, id)
		if err != nil {
			s.adoStoreError(w, id, err)
			return
		}
		if wantRev != nil && cur.rev != *wantRev {
			adoTestFailed(w, cur.rev, *wantRev)
			return
		}
		u := fields
		if len(tagOps) > 0 {
			tags, msg := adoApplyTagOps(cur.labelNames(), tagOps)
			if msg != "" {
				adoPatchFailed(w, msg)
				return
			}
			tags = s.store.spellings(c.repo, adoKeepSpelling(cur.labelNames(), tags))
			u.Labels = &tags
			// A tag the project does not define is created by the update,
			// if the identity may create tags (ado_rights.go).
			if s.requestAccess(r).CannotCreateTags {
				undefined, err := s.adoUndefinedTags(c.repo, cur.labelNames(), tags)
				if err != nil {
					s.adoStoreError(w, id, err)
					return
				}
				if len(undefined) > 0 {
					adoTagCreateRefused(w)
					return
				}
			}
		}
		// Every save validates the whole work item (ado_rights.go).
		if field := s.store.brokenRule(c.repo, id); field != "" {
			adoRuleRefused(w, field)
			return
		}
		version := cur.version
		sn, _, err := s.store.apply(c.repo, id, func(v int64) bool { return v == version }, by, u)
		if errors.Is(err, ErrPreconditionFailed) && wantRev == nil && try < adoApplyTries {
			continue
		}
		if errors.Is(err, ErrPreconditionFailed) && wantRev != nil {
			adoTestFailed(w, cur.rev+1, *wantRev) // another writer saved after the test was read
			return
		}
		if err != nil {
			s.adoStoreError(w, id, err)
			return
		}
		writeJSON(w, http.StatusOK, adoWorkItemJSON(c.base, sn, nil, true))
		return
	}
}

// System.ChangedBy is read-only, but an update made with bypassRules=true
// by an identity granted "Bypass rules on work item updates" may write it:
// integrations use that to record the person they act for
// (tfsaggregator/aggregator-cli#62: "a PAT with appropriate permission to
// 'Bypass rules on work item updates' is needed; ChangedBy needs to be
// updated to the (on behalf) account"; microsoft/mail2bug#30: "set 'Changed
// By' (which you can modify if enabling BypassRules) and that shows the
// 'Changed By' user (via ... Mail2Bug account) in the history"). The
// "via" account is System.AuthorizedAs, which the service always sets to
// the identity that authenticated the request; no request can write it.
// Without bypassRules the service disregards a value written to such a
// field and sets its own (Azure/azure-devops-cli-extension#1070, for
// System.ChangedDate); the sim ignores the ChangedBy written. The updates,
// revisions, work item and service hook payloads then show ChangedBy
// (and revisedBy) as written and AuthorizedAs as the authenticated one.
//
// System.History written by an update is a comment, authored (createdBy)
// by the authenticated identity.

// adoBypassRules reports whether the update asks to bypass rules.
func adoBypassRules(r *http.Request) bool {
	b, _ := strconv.ParseBool(r.URL.Query().Get("bypassRules"))
	return b
}

// adoLoginOf reads the sim login of an identity value as a patch writes
// it: a unique name ("ada@sim.invalid"), "Display Name <unique name>", or a
// bare login.
func adoLoginOf(v string) string {
	if i, j := strings.LastIndexByte(v, '<'), strings.LastIndexByte(v, '>'); i >= 0 && j > i {
		v = v[i+1 : j]
	}
	v = strings.TrimSpace(v)
	if login, ok := strings.CutSuffix(v, adoUniqueSuffix); ok && login != "" {
		return login
	}
	return v
}

// adoApplyTries bounds how often an unconditional update is recomputed
// because another writer saved the work item in between.
const adoApplyTries = 100

// adoSetField records a write of a field other than System.Tags in u; false
// for a field the sim does not model.
func adoSetField(u *update, field, v string) bool {
	switch field {
	case "System.Title":
		u.Title = &v
	case "System.Description":
		u.Body = &v
	case "System.State":
		open := !adoIsClosedState(v)
		u.Open = &open
	default:
		return false
	}
	return true
}

func adoIsClosedState(state string) bool {
	return slices.ContainsFunc(adoClosedStates, func(c string) bool { return strings.EqualFold(c, state) })
}

// adoInt reads a JSON number or numeric string.
func adoInt(raw json.RawMessage) (int, bool) {
	var n int
	if err := json.Unmarshal(raw, &n); err == nil {
		return n, true
	}
	var str string
	if err := json.Unmarshal(raw, &str); err == nil {
		n, err := strconv.Atoi(str)
		return n, err == nil
	}
	return 0, false
}

// adoWorkItemsBatch is "Work Items - Get Work Items Batch": at most 200
// ids, optional fields, $expand (not with fields) and errorPolicy (fail,
// the default, answers 404 for a missing id; omit returns null in its
// place).
func (s *Sim) adoWorkItemsBatch(w http.ResponseWriter, r *http.Request, c *adoCall) {
	var req struct {
		IDs         []int    `json:"ids"`
		Fields      []string `json:"fields"`
		Expand      string   `json:"$expand"`
		ErrorPolicy string   `json:"errorPolicy"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		adoError(w, http.StatusBadRequest, "VssPropertyValidationException", "The request body is not a valid WorkItemBatchGetRequest.")
		return
	}
	if len(req.IDs) == 0 || len(req.IDs) > adoBatchMax {
		adoError(w, http.StatusBadRequest, "VssPropertyValidationException",
			fmt.Sprintf("The number of work item ids must be between 1 and %d; got %d.", adoBatchMax, len(req.IDs)))
		return
	}
	expand := strings.ToLower(req.Expand)
	if req.Fields != nil && expand != "" && expand != "none" {
		adoError(w, http.StatusBadRequest, "ConflictingParametersException", "The expand parameter can not be used with the fields parameter.")
		return
	}
	if c.repo == "" && !s.orgNumbered(c.org) {
		adoError(w, http.StatusBadRequest, "VssServiceException", adoOrgLevelRefusal)
		return
	}
	out := make([]*adoWorkItem, 0, len(req.IDs))
	for _, id := range req.IDs {
		repo := c.repo
		if repo == "" {
			repo = s.adoFindWorkItem(c.org, id)
		}
		sn, err := s.store.get(repo, id)
		if errors.Is(err, ErrNotFound) && strings.EqualFold(req.ErrorPolicy, "omit") {
			out = append(out, nil)
			continue
		}
		if err != nil {
			s.adoStoreError(w, id, err)
			return
		}
		wi := adoWorkItemJSON(c.base, sn, req.Fields, expand == "links" || expand == "all")
		out = append(out, &wi)
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(out), "value": out})
}

// adoAddComment is "Comments - Add Work Item Comment" (7.1-preview.4):
// {"text": ...}; format=markdown|html (html when absent).
func (s *Sim) adoAddComment(w http.ResponseWriter, r *http.Request, c *adoCall) {
	id, ok := adoWorkItemID(w, r)
	if !ok {
		return
	}
	var req struct {
		Text *string `json:"text"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Text == nil || *req.Text == "" {
		adoError(w, http.StatusBadRequest, "VssPropertyValidationException", "The comment text must not be empty.")
		return
	}
	format := strings.ToLower(r.URL.Query().Get("format"))
	switch format {
	case "":
		format = "html"
	case "markdown", "html":
	default:
		adoError(w, http.StatusBadRequest, "ArgumentException", fmt.Sprintf("The value '%s' is not valid for format.", format))
		return
	}
	sn, commentID, err := s.store.apply(c.repo, id, nil, c.by, update{Comment: req.Text})
	if err != nil {
		s.adoStoreError(w, id, err)
		return
	}
	writeJSON(w, http.StatusOK, adoCommentJSON(c.base, sn, commentID, format))
}

// adoOrgLevelRefusal answers an organisation-level read of an organisation
// whose work items the sim numbers per project: ids would collide across
// projects, which Azure DevOps never lets happen, so the sim refuses
// rather than answer what the service cannot.
const adoOrgLevelRefusal = "sim: organisation-level work item reads need the organisation numbered as Azure DevOps numbers it (Sim.NumberWorkItemsPerOrganisation)"

// NumberWorkItemsPerOrganisation numbers org's work items from one sequence
// across its projects, as Azure DevOps does ("the ID is unique within the
// organization", https://learn.microsoft.com/azure/devops/boards/work-items/about-work-items),
// so organisation-level WIQL and batch reads can be served. Call it before
// any work item of org exists; other owners keep per-repository numbers
// (GitHub, GitLab).
func (s *Sim) NumberWorkItemsPerOrganisation(org string) {
	st := s.store
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.orgNumbers == nil {
		st.orgNumbers = map[string]*int{}
	}
	if _, ok := st.orgNumbers[strings.ToLower(org)]; !ok {
		next := 1
		st.orgNumbers[strings.ToLower(org)] = &next
	}
}

func (s *Sim) orgNumbered(org string) bool {
	st := s.store
	st.mu.Lock()
	defer st.mu.Unlock()
	_, ok := st.orgNumbers[strings.ToLower(org)]
	return ok
}

// adoFindWorkItem is the project of org holding work item id, "" when none.
func (s *Sim) adoFindWorkItem(org string, id int) string {
	for _, repo := range s.adoOrgRepos(org) {
		if _, err := s.store.get(repo, id); err == nil {
			return repo
		}
	}
	return ""
}
