package trackersim

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// GitHub's GraphQL endpoint, POST {api}/graphql
// (https://docs.github.com/en/graphql/guides/forming-calls-with-graphql),
// serving the part of the schema the daemon's GraphQL label writes use
// (platforms/github/graphql.go), over the same issue store as REST so both
// see the same labels:
//
//   - query: repository(owner:, name:) { id, issue(number:) { id number
//     labels(first:, after:) }, label(name:) { id name } } and rateLimit
//     { limit cost remaining used resetAt };
//   - mutation: addLabelsToLabelable and removeLabelsFromLabelable
//     (input: {labelableId, labelIds}), answering labelable { labels } and,
//     through an inline fragment, "... on Issue { state title body url }":
//     a mutation's payload can select any field of the labelable, as
//     GitHub's schema has it (AddLabelsToLabelablePayload.labelable is a
//     Labelable, which Issue implements,
//     https://docs.github.com/en/graphql/reference/mutations#addlabelstolabelable).
//
// Mutations of one document run one after the other, in document order
// (https://spec.graphql.org/October2021/#sec-Mutation), each a write of its
// own: a person's edit can land between two of them, as on GitHub.
//
// Answers follow GitHub's shapes: errors come back with HTTP 200 in an
// "errors" array beside "data" (github/docs#22607, ansible/ansibullbot#796);
// an unknown node id is {"type":"NOT_FOUND","path":[…],"message":"Could not
// resolve to a node with the global id of '…'."} with the field null
// (octokit/octokit.graphql.net#201, magit/forge#784); an issue number that
// is not an issue is NOT_FOUND "Could not resolve to an Issue with the
// number of N."; an unknown field fails the whole document without data
// ("Field 'createLabel' doesn't exist on type 'Mutation'",
// octokit/graphql.js#135 — createLabel is in no schema the sim serves,
// since GitHub gated it behind a schema preview).
//
// The budget is GraphQL's own, apart from REST's core
// (https://docs.github.com/en/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api):
// 5,000 points an hour per token; a request costs the connections it asks
// for (each connection's requests, the product of the first/last of the
// connections above it, summed and divided by 100, rounded) and at least 1
// point, which is what a call without large connections is charged
// (react-native-community/directory#338). Its headers name the resource
// "graphql". Over the budget GitHub answers 200 with {"type":"RATE_LIMITED",
// "message":"API rate limit exceeded for user ID N."} and remaining 0
// (renovatebot/renovate#21861; some answers say "RATE_LIMIT",
// yanyongyu/githubkit#271).

const (
	docsGraphQL          = "https://docs.github.com/graphql"
	docsGraphQLRateLimit = "https://docs.github.com/en/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api"
	// DefaultGraphQLRateLimit is GitHub's GraphQL points per token and hour.
	DefaultGraphQLRateLimit = 5000
	// ghGraphQLMaxPage is the largest first/last GitHub accepts.
	ghGraphQLMaxPage = 100
)

func (s *Sim) githubGraphQLRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /github/graphql", func(w http.ResponseWriter, r *http.Request) {
		s.count(func(st *Stats) { st.Calls["POST /graphql"]++ })
		// free: the handler charges the request's points itself (graphqlCall).
		s.serveGitHub(w, r, docsGraphQL, true, &s.graphqlRate, s.graphqlLimit, s.graphqlCall)
	})
}

// gqlError is one entry of an answer's "errors".
type gqlError struct {
	Type       string         `json:"type,omitempty"`
	Path       []any          `json:"path,omitempty"`
	Extensions map[string]any `json:"extensions,omitempty"`
	Locations  []gqlLocation  `json:"locations,omitempty"`
	Message    string         `json:"message"`
}

type gqlLocation struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// gqlSchema is the sim's schema: each type's fields and their types ("" for
// a scalar).
var gqlSchema = map[string]map[string]string{
	"Query":                            {"repository": "Repository", "rateLimit": "RateLimit"},
	"Mutation":                         {"addLabelsToLabelable": "AddLabelsToLabelablePayload", "removeLabelsFromLabelable": "RemoveLabelsFromLabelablePayload"},
	"Repository":                       {"id": "", "name": "", "nameWithOwner": "", "issue": "Issue", "label": "Label"},
	"Issue":                            {"id": "", "number": "", "title": "", "body": "", "url": "", "state": "", "labels": "LabelConnection"},
	"LabelConnection":                  {"nodes": "Label", "totalCount": "", "pageInfo": "PageInfo"},
	"PageInfo":                         {"hasNextPage": "", "endCursor": ""},
	"Label":                            {"id": "", "name": "", "color": ""},
	"RateLimit":                        {"limit": "", "cost": "", "remaining": "", "used": "", "resetAt": ""},
	"AddLabelsToLabelablePayload":      {"clientMutationId": "", "labelable": "Labelable"},
	"RemoveLabelsFromLabelablePayload": {"clientMutationId": "", "labelable": "Labelable"},
	"Labelable":                        {"labels": "LabelConnection"},
}

// gqlImplements names the interface each object type of the sim's schema
// implements: an Issue is a Labelable
// (https://docs.github.com/en/graphql/reference/interfaces#labelable).
var gqlImplements = map[string]string{"Issue": "Labelable"}

// fragmentApplies reports whether an inline fragment on cond applies to an
// object resolved as typ: the same type, or Issue inside Labelable (the
// labelable of a label mutation is the issue).
func fragmentApplies(typ, cond string) bool {
	return cond == typ || gqlImplements[cond] == typ
}

// gqlRequest is the body of a POST /graphql.
type gqlRequest struct {
	Query         string         `json:"query"`
	Variables     map[string]any `json:"variables"`
	OperationName string         `json:"operationName"`
}

func (s *Sim) graphqlCall(w http.ResponseWriter, r *http.Request, c *ghCall) {
	var req gqlRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeGHError(w, http.StatusBadRequest, "Problems parsing JSON", c.doc)
		return
	}
	op, err := parseGraphQL(req.Query)
	if err != nil {
		var pe gqlParseError
		errors.As(err, &pe)
		writeJSON(w, http.StatusOK, map[string]any{"errors": []gqlError{{Message: err.Error(),
			Locations: []gqlLocation{{Line: pe.line, Column: pe.col}}}}})
		return
	}
	root := "Query"
	if op.kind == "mutation" {
		root = "Mutation"
	}
	if errs := validateGraphQL(root, op.sel, nil); len(errs) > 0 {
		writeJSON(w, http.StatusOK, map[string]any{"errors": errs})
		return
	}
	token, _ := s.authenticate(r)
	b := s.graphqlRate.get(token, s.clock(), s.graphqlLimit)
	cost := graphqlCost(op.sel, req.Variables)
	s.graphqlRate.mu.Lock()
	over := b.used+cost > s.graphqlLimit
	if !over {
		b.used += cost
	}
	s.graphqlRate.mu.Unlock()
	if over {
		writeJSON(w, http.StatusOK, map[string]any{"errors": []gqlError{{Type: "RATE_LIMITED",
			Message: fmt.Sprintf("API rate limit exceeded for user ID %d.", userID(botLogin))}}})
		return
	}
	if s.secondaryOn {
		points := 1
		if op.kind == "mutation" {
			points = ghSecondaryWritePoints
		}
		if !s.secondary.points(token, true, points, s.clock()) {
			s.count(func(st *Stats) { st.SecondaryRefused++ })
			writeSecondaryLimit(w, http.StatusForbidden)
			return
		}
	}
	ex := &gqlExec{s: s, c: c, vars: req.Variables, cost: cost, bucket: b, token: token}
	data := ex.object(root, nil, op.sel, nil)
	out := map[string]any{"data": data}
	if len(ex.errs) > 0 {
		out["errors"] = ex.errs
	}
	writeJSON(w, http.StatusOK, out)
}

// validateGraphQL reports fields the schema lacks and selections that do
// not fit their field's type, as GitHub does before running anything.
func validateGraphQL(typ string, sel []gqlField, path []any) []gqlError {
	var errs []gqlError
	for _, f := range sel {
		p := append(append([]any{}, path...), f.key())
		if f.name == "__typename" {
			continue
		}
		if f.on != "" {
			if !fragmentApplies(typ, f.on) {
				errs = append(errs, gqlError{Path: path, Locations: []gqlLocation{{f.line, f.col}},
					Message: fmt.Sprintf("Fragment on %s can't be spread inside %s", f.on, typ)})
				continue
			}
			errs = append(errs, validateGraphQL(f.on, f.sel, path)...)
			continue
		}
		ft, ok := gqlSchema[typ][f.name]
		switch {
		case !ok:
			errs = append(errs, gqlError{Path: p, Locations: []gqlLocation{{f.line, f.col}},
				Extensions: map[string]any{"code": "undefinedField", "typeName": typ, "fieldName": f.name},
				Message:    fmt.Sprintf("Field '%s' doesn't exist on type '%s'", f.name, typ)})
		case ft == "" && f.sel != nil:
			errs = append(errs, gqlError{Path: p, Locations: []gqlLocation{{f.line, f.col}},
				Message: fmt.Sprintf("Selections can't be made on scalars (field '%s' returns a scalar)", f.name)})
		case ft != "" && f.sel == nil:
			errs = append(errs, gqlError{Path: p, Locations: []gqlLocation{{f.line, f.col}},
				Message: fmt.Sprintf("Field must have selections (field '%s' returns %s but has no selections.)", f.name, ft)})
		case ft != "":
			errs = append(errs, validateGraphQL(ft, f.sel, p)...)
		}
	}
	return errs
}

// graphqlCost is a request's primary rate limit points: each connection
// (a field with first or last) needs as many requests as the product of
// the first/last of the connections above it; their sum divided by 100 and
// rounded, at least 1.
func graphqlCost(sel []gqlField, vars map[string]any) int {
	var walk func(sel []gqlField, mult int) int
	walk = func(sel []gqlField, mult int) int {
		n := 0
		for _, f := range sel {
			m := mult
			if page, ok := pageSize(f, vars); ok {
				n += mult
				m = mult * page
			}
			n += walk(f.sel, m)
		}
		return n
	}
	return max(1, int(math.Round(float64(walk(sel, 1))/100)))
}

// pageSize is a connection field's first or last.
func pageSize(f gqlField, vars map[string]any) (int, bool) {
	for _, a := range []string{"first", "last"} {
		if v, ok := f.args[a]; ok {
			if n, ok := gqlInt(resolveVar(v, vars)); ok {
				return n, true
			}
		}
	}
	return 0, false
}

func resolveVar(v any, vars map[string]any) any {
	switch x := v.(type) {
	case gqlVar:
		return vars[string(x)]
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = resolveVar(e, vars)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = resolveVar(e, vars)
		}
		return out
	}
	return v
}

func gqlInt(v any) (int, bool) {
	switch n := v.(type) {
	case int64:
		return int(n), true
	case float64: // a JSON variable
		return int(n), n == math.Trunc(n)
	}
	return 0, false
}

// gqlExec runs one operation.
type gqlExec struct {
	s      *Sim
	c      *ghCall
	vars   map[string]any
	errs   []gqlError
	cost   int
	bucket *bucket
	token  string
}

func (ex *gqlExec) fail(f gqlField, path []any, typ, msg string) {
	ex.errs = append(ex.errs, gqlError{Type: typ, Path: path, Locations: []gqlLocation{{f.line, f.col}}, Message: msg})
}

func (ex *gqlExec) arg(f gqlField, name string) any { return resolveVar(f.args[name], ex.vars) }

// gqlRepo, gqlLabels and gqlPayload are the objects resolvers pass down.
type (
	gqlRepo   struct{ name string }
	gqlLabels struct {
		repo   string
		labels []label
	}
)

// object resolves sel on obj of type typ. A field that fails is null, and
// its error is recorded; the other fields still resolve (mutations in
// order).
func (ex *gqlExec) object(typ string, obj any, sel []gqlField, path []any) map[string]any {
	out := make(map[string]any, len(sel))
	for _, f := range sel {
		if f.on != "" {
			// The sim's only interface, Labelable, is always an Issue.
			if fragmentApplies(typ, f.on) {
				maps.Copy(out, ex.object(f.on, obj, f.sel, path))
			}
			continue
		}
		p := append(append([]any{}, path...), f.key())
		if f.name == "__typename" {
			out[f.key()] = typ
			continue
		}
		v, ok := ex.field(typ, obj, f, p)
		if !ok {
			out[f.key()] = nil
			continue
		}
		if ft := gqlSchema[typ][f.name]; ft != "" && v != nil {
			if list, isList := v.([]any); isList {
				items := make([]any, len(list))
				for i, e := range list {
					items[i] = ex.object(ft, e, f.sel, append(append([]any{}, p...), i))
				}
				v = items
			} else {
				v = ex.object(ft, v, f.sel, p)
			}
		}
		out[f.key()] = v
	}
	return out
}

// field resolves one field of obj; ok false means null with an error.
func (ex *gqlExec) field(typ string, obj any, f gqlField, p []any) (any, bool) {
	st := ex.s.store
	if m, ok := obj.(map[string]any); ok { // a scalar-only object (RateLimit)
		return m[f.name], true
	}
	switch typ + "." + f.name {
	case "Query.repository":
		owner, _ := ex.arg(f, "owner").(string)
		name, _ := ex.arg(f, "name").(string)
		repo := owner + "/" + name
		if _, _, ok := st.repoInfo(repo); !ok {
			ex.fail(f, p, "NOT_FOUND", fmt.Sprintf("Could not resolve to a Repository with the name '%s'.", repo))
			return nil, false
		}
		return gqlRepo{name: repo}, true
	case "Query.rateLimit":
		ex.s.graphqlRate.mu.Lock()
		used, reset := ex.bucket.used, ex.bucket.reset
		ex.s.graphqlRate.mu.Unlock()
		limit := ex.s.graphqlLimit
		return map[string]any{"limit": limit, "cost": ex.cost, "used": used,
			"remaining": max(limit-used, 0), "resetAt": reset.UTC().Format(time.RFC3339)}, true
	case "Repository.id":
		id, _, _ := st.repoInfo(obj.(gqlRepo).name)
		return fmt.Sprintf("R_sim%d", id), true
	case "Repository.name":
		_, n, _ := strings.Cut(obj.(gqlRepo).name, "/")
		return n, true
	case "Repository.nameWithOwner":
		return obj.(gqlRepo).name, true
	case "Repository.issue":
		n, _ := gqlInt(ex.arg(f, "number"))
		sn, err := st.get(obj.(gqlRepo).name, n)
		if err != nil {
			ex.fail(f, p, "NOT_FOUND", fmt.Sprintf("Could not resolve to an Issue with the number of %d.", n))
			return nil, false
		}
		return sn, true
	case "Repository.label":
		// GitHub answers null, without an error, for a name the repository
		// lacks. Names compare case-insensitively: a repository keeps one
		// spelling of a name (hackebrot/labels#15).
		name, _ := ex.arg(f, "name").(string)
		ls, _ := st.repoLabels(obj.(gqlRepo).name)
		for _, l := range ls {
			if strings.EqualFold(l.name, name) {
				return gqlLabels{repo: obj.(gqlRepo).name, labels: []label{l}}, true
			}
		}
		return nil, true
	case "Issue.id":
		return fmt.Sprintf("I_sim%d", obj.(snapshot).id), true
	case "Issue.number":
		return obj.(snapshot).number, true
	case "Issue.title":
		return obj.(snapshot).title, true
	case "Issue.body":
		return obj.(snapshot).body, true
	case "Issue.url":
		return issueHTMLURL(ex.c.base, obj.(snapshot)), true
	case "Issue.state":
		if obj.(snapshot).open {
			return "OPEN", true
		}
		return "CLOSED", true
	case "Issue.labels", "Labelable.labels":
		sn := obj.(snapshot)
		return ex.page(f, p, gqlLabels{repo: sn.repo, labels: sn.labels})
	case "LabelConnection.nodes":
		ls := obj.(gqlPage).gqlLabels
		out := make([]any, len(ls.labels))
		for i, l := range ls.labels {
			out[i] = gqlLabels{repo: ls.repo, labels: []label{l}}
		}
		return out, true
	case "LabelConnection.totalCount":
		return obj.(gqlPage).total, true
	case "LabelConnection.pageInfo":
		return obj.(gqlPage), true
	case "PageInfo.hasNextPage":
		return obj.(gqlPage).next != "", true
	case "PageInfo.endCursor":
		if c := obj.(gqlPage).end; c != "" {
			return c, true
		}
		return nil, true
	case "Label.id":
		return fmt.Sprintf("LA_sim%d", obj.(gqlLabels).labels[0].id), true
	case "Label.name":
		return obj.(gqlLabels).labels[0].name, true
	case "Label.color":
		return obj.(gqlLabels).labels[0].color, true
	case "Mutation.addLabelsToLabelable", "Mutation.removeLabelsFromLabelable":
		return ex.labelMutation(f, p, f.name == "addLabelsToLabelable")
	case "AddLabelsToLabelablePayload.clientMutationId", "RemoveLabelsFromLabelablePayload.clientMutationId":
		return obj.(gqlPayload).clientMutationID, true
	case "AddLabelsToLabelablePayload.labelable", "RemoveLabelsFromLabelablePayload.labelable":
		return obj.(gqlPayload).issue, true
	}
	ex.fail(f, p, "", fmt.Sprintf("Field '%s' doesn't exist on type '%s'", f.name, typ))
	return nil, false
}

// gqlPage is one page of a connection, its nodes as a gqlLabels.
type gqlPage struct {
	gqlLabels
	total     int
	next, end string
}

type gqlPayload struct {
	clientMutationID any
	issue            snapshot
}

// page cuts the connection's page: first (required, 1–100, as GitHub's
// "You must provide a `first` or `last` value" refusal says) after the
// cursor "after".
func (ex *gqlExec) page(f gqlField, p []any, ls gqlLabels) (any, bool) {
	first, ok := gqlInt(ex.arg(f, "first"))
	if !ok || first < 1 || first > ghGraphQLMaxPage {
		ex.fail(f, p, "", fmt.Sprintf("You must provide a `first` or `last` value between 1 and %d to properly paginate the `%s` connection.", ghGraphQLMaxPage, f.name))
		return nil, false
	}
	lo := 0
	if a, ok := ex.arg(f, "after").(string); ok {
		raw, err := base64.StdEncoding.DecodeString(a)
		n, err2 := strconv.Atoi(strings.TrimPrefix(string(raw), "cursor:"))
		if err != nil || err2 != nil || n < 0 {
			ex.fail(f, p, "", fmt.Sprintf("`%s` does not appear to be a valid cursor.", a))
			return nil, false
		}
		lo = min(n, len(ls.labels))
	}
	hi := min(lo+first, len(ls.labels))
	pg := gqlPage{gqlLabels: gqlLabels{repo: ls.repo, labels: ls.labels[lo:hi]}, total: len(ls.labels)}
	if hi > lo {
		pg.end = base64.StdEncoding.EncodeToString([]byte("cursor:" + strconv.Itoa(hi)))
	}
	if hi < len(ls.labels) {
		pg.next = pg.end
	}
	return pg, true
}

// labelMutation is addLabelsToLabelable or removeLabelsFromLabelable
// (https://docs.github.com/en/graphql/reference/mutations#addlabelstolabelable):
// input {labelableId: ID!, labelIds: [ID!]!, clientMutationId}. Removing a
// label the issue lacks is no error.
func (ex *gqlExec) labelMutation(f gqlField, p []any, add bool) (any, bool) {
	in, _ := ex.arg(f, "input").(map[string]any)
	issueID, _ := in["labelableId"].(string)
	ids, _ := in["labelIds"].([]any)
	notFound := func(id string) (any, bool) {
		ex.fail(f, p, "NOT_FOUND", fmt.Sprintf("Could not resolve to a node with the global id of '%s'.", id))
		return nil, false
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(issueID, "I_sim"), 10, 64)
	if err != nil || !strings.HasPrefix(issueID, "I_sim") {
		return notFound(issueID)
	}
	repo, number, ok := ex.s.store.issueByID(n)
	if !ok {
		return notFound(issueID)
	}
	var names []string
	for _, v := range ids {
		id, _ := v.(string)
		lid, err := strconv.ParseInt(strings.TrimPrefix(id, "LA_sim"), 10, 64)
		l, ok := ex.s.store.labelByID(repo, lid)
		if err != nil || !strings.HasPrefix(id, "LA_sim") || !ok {
			return notFound(id)
		}
		names = append(names, l.name)
	}
	if ex.s.secondaryOn && ex.s.labelsAsContent && !ex.s.secondary.content(ex.token, ex.s.clock()) {
		ex.s.count(func(st *Stats) { st.SecondaryRefused++ })
		ex.fail(f, p, "UNPROCESSABLE", "was submitted too quickly")
		return nil, false
	}
	u := update{Add: names, FoldCase: true}
	if !add {
		u = update{Remove: names, RemoveIfPresent: true}
	}
	sn, _, err := ex.s.store.apply(repo, number, nil, ex.c.by, u)
	switch {
	case errors.Is(err, errLabelsRefused):
		ex.fail(f, p, "FORBIDDEN", ghRefusedMessage)
		return nil, false
	case err != nil:
		return notFound(issueID)
	}
	return gqlPayload{clientMutationID: in["clientMutationId"], issue: sn}, true
}
