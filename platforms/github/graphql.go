package github

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	gh "github.com/google/go-github/v60/github"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// The GraphQL write path of Relabel (Options.API = APIGraphQL): one POST
// {graphql} per transition carrying addLabelsToLabelable then
// removeLabelsFromLabelable, which GitHub runs in that order
// (https://spec.graphql.org/October2021/#sec-Mutation), instead of REST's
// POST …/labels then DELETE …/labels/{name}. It is charged to the GraphQL
// budget (5,000 points an hour, a request of these mutations 1 point),
// which GitHub keeps apart from REST's core one
// (https://docs.github.com/en/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api);
// both count the same toward the secondary limits (a request with a
// mutation is 5 secondary points, as a REST write is, and content
// creation is counted across REST and GraphQL). docs/github-graphql.md has
// the sources.
//
// The mutations address the issue and labels by node id. The issue's is
// learned from every REST issue read (node_id) and otherwise by one query;
// label ids are learned from every answer's labels and by label(name:),
// and kept for the tracker's repository. A label the repository lacks is
// created through REST (POST /repos/{o}/{r}/labels) once: createLabel is a
// schema-preview mutation that a GitHub without the preview does not have
// (octokit/graphql.js#135).
//
// Like REST, the write names single labels, so a person's concurrent edit
// of any other label survives it, and each mutation's answer is the issue's
// labels after it, checked for a lifecycle label another writer put there.
// GitHub answers errors with HTTP 200 and "errors" (github/docs#22607); one
// that REST would not have (a stale label id, GraphQL's own budget spent,
// a field this GitHub lacks) makes the transition go through REST instead.

// API values (Options.API).
const (
	APIREST    = "rest"
	APIGraphQL = "graphql"
)

// maxCachedIssues bounds the issue node ids a tracker keeps; past it the
// cache starts over (a miss costs one query).
const maxCachedIssues = 10_000

// graphqlURL is the GraphQL endpoint of a REST API root: api.github.com's
// is https://api.github.com/graphql, a GitHub Enterprise Server's
// http(s)://HOST/api/graphql for REST's /api/v3/
// (https://docs.github.com/en/enterprise-server@3.11/graphql/guides/forming-calls-with-graphql,
// apache/devlake#7541), and any other root's (the sim's) root + "graphql".
func graphqlURL(base *url.URL) string {
	u := *base
	if strings.HasSuffix(u.Path, "/api/v3/") {
		u.Path = strings.TrimSuffix(u.Path, "v3/") + "graphql"
	} else {
		u.Path += "graphql"
	}
	return u.String()
}

// nodeIDs caches the node ids of one repository's issues and labels.
type nodeIDs struct {
	mu     sync.Mutex
	issues map[int]string
	labels []labelNode // few: the lifecycle labels and the trigger
}

type labelNode struct{ name, id string }

func (c *nodeIDs) issue(n int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.issues[n]
}

func (c *nodeIDs) setIssue(n int, id string) {
	if id == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.issues == nil || len(c.issues) >= maxCachedIssues {
		c.issues = map[int]string{}
	}
	c.issues[n] = id
}

func (c *nodeIDs) label(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.labels {
		if platforms.SameLabel(Platform, l.name, name) {
			return l.id
		}
	}
	return ""
}

func (c *nodeIDs) setLabel(name, id string) {
	if id == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, l := range c.labels {
		if platforms.SameLabel(Platform, l.name, name) {
			c.labels[i] = labelNode{name, id}
			return
		}
	}
	c.labels = append(c.labels, labelNode{name, id})
}

// others returns the names other than name cached with id: after an answer
// showed a label under a new name, the name it was renamed from and the new
// one share its id.
func (c *nodeIDs) others(id, name string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, l := range c.labels {
		if l.id == id && !platforms.SameLabel(Platform, l.name, name) {
			out = append(out, l.name)
		}
	}
	return out
}

// forgetLabels drops every label id, after GitHub refused one or an id
// named a label since renamed.
func (c *nodeIDs) forgetLabels() {
	c.mu.Lock()
	c.labels = nil
	c.mu.Unlock()
}

// restFallback marks a GraphQL failure that the REST path does not share:
// the transition is written through REST instead.
type restFallback struct{ err error }

func (e *restFallback) Error() string { return e.err.Error() }
func (e *restFallback) Unwrap() error { return e.err }

// restOnlyKey marks the context of Relabel's REST fallback.
type restOnlyKey struct{}

// viaREST reports whether ctx asks Relabel for its REST path.
func viaREST(ctx context.Context) bool { return ctx.Value(restOnlyKey{}) != nil }

// relabelREST is the REST Relabel of the GraphQL path's fallback.
func (t *Tracker) relabelREST(ctx context.Context, tk *platforms.Ticket, remove, add []string) (*platforms.Ticket, error) {
	return t.Relabel(context.WithValue(ctx, restOnlyKey{}, true), tk, remove, add...)
}

// relabelGraphQL is Relabel through GraphQL (see the file comment); its
// contract is Relabel's. add may name several labels.
func (t *Tracker) relabelGraphQL(ctx context.Context, tk *platforms.Ticket, remove, add []string) (*platforms.Ticket, error) {
	n, err := t.number(tk.Ref)
	if err != nil {
		return nil, err
	}
	// A snapshot from another replica's answer names the issue's node id.
	t.ids.setIssue(n, tk.Node)
	var adds, removes []string
	for _, a := range add {
		if a != "" && !platforms.ContainsLabel(Platform, tk.Labels, a) && !platforms.ContainsLabel(Platform, adds, a) {
			adds = append(adds, a)
		}
	}
	for _, r := range remove {
		if platforms.ContainsLabel(Platform, tk.Labels, r) && !platforms.ContainsLabel(Platform, add, r) && !platforms.ContainsLabel(Platform, removes, r) {
			removes = append(removes, r)
		}
	}
	out := *tk
	out.Version, out.Whole = "", false
	if len(adds) == 0 && len(removes) == 0 {
		return &out, nil
	}
	afterAdd, labels, is, err := t.graphqlRelabel(ctx, n, adds, removes)
	var fb *restFallback
	if errors.As(err, &fb) {
		t.log.Warn("graphql relabel refused; writing through REST", zap.String("ticket", tk.Ref.ID), zap.Error(err))
		return t.relabelREST(ctx, tk, remove, add)
	}
	if err != nil {
		return nil, fmt.Errorf("github: relabel %s: %w", tk.Ref.ID, err)
	}
	if renamed := t.renamedAdds(ctx, tk, n, adds, afterAdd, labels); len(renamed) > 0 {
		t.log.Warn("graphql relabel added a renamed label; writing through REST",
			zap.String("ticket", tk.Ref.ID), zap.Strings("labels", renamed))
		return t.relabelREST(ctx, tk, remove, add)
	}
	if l := t.foreignLifecycle(tk.Labels, adds, afterAdd); l != "" && len(removes) > 0 {
		// Another writer's lifecycle label was there before the removal
		// ran: REST would have taken its add back and removed nothing, so
		// undo both, restoring only the removed labels that were still
		// on the issue right before the removal.
		var restore []string
		for _, r := range removes {
			if platforms.ContainsLabel(Platform, afterAdd, r) {
				restore = append(restore, r)
			}
		}
		if _, got, _, err := t.graphqlRelabel(ctx, n, restore, adds); err != nil {
			t.log.Warn("relabel raced another writer; undoing the write failed",
				zap.String("ticket", tk.Ref.ID), zap.Strings("added", adds), zap.Error(err))
		} else {
			labels = got
		}
		return nil, t.raced(tk, l, labels)
	}
	if l := t.foreignLifecycle(tk.Labels, adds, labels); l != "" {
		if len(removes) == 0 {
			// Only an add ran: take it back, as REST does.
			if _, _, _, err := t.graphqlRelabel(ctx, n, nil, adds); err != nil {
				t.log.Warn("relabel raced another writer; taking back the added label failed",
					zap.String("ticket", tk.Ref.ID), zap.Strings("labels", adds), zap.Error(err))
			}
		}
		return nil, t.raced(tk, l, labels)
	}
	out.Labels = labels
	if is != nil {
		// The answer's issue: the whole ticket after the write.
		out.Title, out.Body, out.URL, out.Open, out.Whole = is.Title, is.Body, is.URL, is.State == "OPEN", true
		out.Node = t.ids.issue(n)
	}
	t.log.Debug("relabelled through graphql", zap.String("ticket", tk.Ref.ID), zap.Strings("remove", removes), zap.Strings("add", adds))
	return &out, nil
}

// renamedAdds returns the labels of adds missing from the add's answer
// (afterAdd, or labels when the answer needed a full read). GitHub keeps a
// label's node id when it is renamed
// (https://docs.github.com/en/rest/issues/labels#update-a-label changes
// name in place), so a cached id can add the label under its new name. It
// then takes back what the stale ids added that was not on the issue
// before, and forgets every cached label id; the caller writes the
// transition through REST, which names labels by name.
func (t *Tracker) renamedAdds(ctx context.Context, tk *platforms.Ticket, n int, adds, afterAdd, labels []string) []string {
	got := afterAdd
	if got == nil {
		got = labels
	}
	var missing, takeBack []string
	for _, a := range adds {
		if platforms.ContainsLabel(Platform, got, a) {
			continue
		}
		missing = append(missing, a)
		if id := t.ids.label(a); id != "" {
			for _, o := range t.ids.others(id, a) {
				if platforms.ContainsLabel(Platform, got, o) && !platforms.ContainsLabel(Platform, tk.Labels, o) &&
					!platforms.ContainsLabel(Platform, takeBack, o) {
					takeBack = append(takeBack, o)
				}
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if len(takeBack) > 0 {
		if _, _, _, err := t.graphqlRelabel(ctx, n, nil, takeBack); err != nil {
			t.log.Warn("taking back a renamed label failed",
				zap.String("ticket", tk.Ref.ID), zap.Strings("labels", takeBack), zap.Error(err))
		}
	}
	t.ids.forgetLabels()
	return missing
}

// graphqlRelabel adds adds then removes removes on issue n in one request
// (one more first when a node id is not known yet). It returns the issue's
// labels after the add (nil when nothing was added) and after the whole
// write, in the daemon's spelling, and the issue's state and text from the
// last mutation's answer (nil when the labels needed a REST read).
func (t *Tracker) graphqlRelabel(ctx context.Context, n int, adds, removes []string) (afterAdd, labels []string, is *issueFields, err error) {
	issueID, addIDs, removeIDs, err := t.nodeIDsFor(ctx, n, adds, removes)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(addIDs) == 0 && len(removeIDs) == 0 {
		return nil, nil, nil, &restFallback{errors.New("no label to write has a node id")}
	}
	var defs, body []string
	vars := map[string]any{"issue": issueID}
	// The labelable is the issue (Issue implements Labelable), so the
	// answer carries its state and text too: the write's answer is the
	// whole ticket, and a caller need not read it (platforms.WholeAnswers).
	const sel = `{ labelable { labels(first: 100) { nodes { id name } pageInfo { hasNextPage } } ... on Issue { state title body url } } }`
	if len(addIDs) > 0 {
		defs, vars["add"] = append(defs, "$add: [ID!]!"), addIDs
		body = append(body, "add: addLabelsToLabelable(input: {labelableId: $issue, labelIds: $add}) "+sel)
	}
	if len(removeIDs) > 0 {
		defs, vars["remove"] = append(defs, "$remove: [ID!]!"), removeIDs
		body = append(body, "remove: removeLabelsFromLabelable(input: {labelableId: $issue, labelIds: $remove}) "+sel)
	}
	doc := "mutation Relabel($issue: ID!, " + strings.Join(defs, ", ") + ") {\n  " + strings.Join(body, "\n  ") + "\n}"
	type answer struct {
		Labelable *struct {
			Labels labelConnection `json:"labels"`
			issueFields
		} `json:"labelable"`
	}
	var data struct {
		Add    *answer `json:"add"`
		Remove *answer `json:"remove"`
	}
	gerrs, err := t.graphql(trackerhttp.WithLabelMutations(ctx, len(body)), doc, vars, &data)
	if err != nil {
		return nil, nil, nil, err
	}
	if gerrs.secondaryLimited() {
		// Shared with REST: writing through REST now would be refused
		// too. Whatever ran before the refusal is safe to write again.
		return nil, nil, nil, fmt.Errorf("%w: %w", trackerhttp.ErrRateLimited, gerrs)
	}
	if len(gerrs) > 0 {
		// A stale label id, a refusal of this mutation, GraphQL's budget:
		// REST names labels by name and has its own budget. Whatever ran
		// before the error is safe to write again through REST.
		t.ids.forgetLabels()
		return nil, nil, nil, &restFallback{gerrs}
	}
	complete := true
	read := func(a *answer) []string {
		if a == nil || a.Labelable == nil {
			complete = false
			return nil
		}
		complete = complete && !a.Labelable.Labels.PageInfo.HasNextPage
		if f := a.Labelable.issueFields; f.State != "" {
			is = &f
		}
		return t.learnLabels(a.Labelable.Labels)
	}
	if data.Add != nil {
		afterAdd = read(data.Add)
		labels = afterAdd
	}
	if data.Remove != nil {
		labels = read(data.Remove)
	}
	if !complete {
		// More than a page of labels: the answer cannot show a foreign
		// lifecycle label past it, so read them all.
		raw, err := t.issueLabels(ctx, n)
		if err != nil {
			return nil, nil, nil, err
		}
		afterAdd, labels, is = nil, t.respell(raw), nil
	}
	return afterAdd, labels, is, nil
}

// issueFields is the issue part of a mutation's answer: "OPEN" or "CLOSED",
// and its text.
type issueFields struct {
	State string `json:"state"`
	Title string `json:"title"`
	Body  string `json:"body"`
	URL   string `json:"url"`
}

// AnswersWhole is true on the GraphQL path (platforms.WholeAnswers): each
// mutation answers with the issue after it. A transition written through
// REST instead (the fallback) answers labels only, without Ticket.Whole.
func (t *Tracker) AnswersWhole() bool { return t.api == APIGraphQL }

// labelConnection is an answer's labels(first: 100).
type labelConnection struct {
	Nodes []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"nodes"`
	PageInfo struct {
		HasNextPage bool `json:"hasNextPage"`
	} `json:"pageInfo"`
}

// learnLabels caches the connection's label ids and returns its names in
// the daemon's spelling.
func (t *Tracker) learnLabels(c labelConnection) []string {
	names := make([]string, 0, len(c.Nodes))
	for _, l := range c.Nodes {
		t.ids.setLabel(l.Name, l.ID)
		names = append(names, l.Name)
	}
	return t.respell(names)
}

// nodeIDsFor returns the node ids of issue n and of the labels, from the
// cache or else one query; a label to add that the repository lacks is
// created, one to remove that it lacks cannot be on the issue and is left
// out.
func (t *Tracker) nodeIDsFor(ctx context.Context, n int, adds, removes []string) (issue string, addIDs, removeIDs []string, err error) {
	issue = t.ids.issue(n)
	var missing []string
	for _, l := range append(append([]string{}, adds...), removes...) {
		if t.ids.label(l) == "" {
			missing = append(missing, l)
		}
	}
	if issue == "" || len(missing) > 0 {
		// The query learns every label the daemon writes while at it, so
		// the ticket's later transitions need none.
		for _, l := range t.spellings {
			if t.ids.label(l) == "" && !platforms.ContainsLabel(Platform, missing, l) {
				missing = append(missing, l)
			}
		}
		if err := t.queryNodeIDs(ctx, n, issue == "", missing); err != nil {
			return "", nil, nil, err
		}
		issue = t.ids.issue(n)
	}
	for _, a := range adds {
		id := t.ids.label(a)
		if id == "" {
			if id, err = t.createLabel(ctx, a); err != nil {
				return "", nil, nil, err
			}
		}
		addIDs = append(addIDs, id)
	}
	for _, r := range removes {
		if id := t.ids.label(r); id != "" {
			removeIDs = append(removeIDs, id)
		}
	}
	return issue, addIDs, removeIDs, nil
}

// queryNodeIDs asks for issue n's node id and labels (when withIssue) and
// for the labels names by name, in one query, and caches what it learns.
func (t *Tracker) queryNodeIDs(ctx context.Context, n int, withIssue bool, names []string) error {
	defs := []string{"$owner: String!", "$name: String!"}
	vars := map[string]any{"owner": t.owner, "name": t.name}
	var fields []string
	if withIssue {
		defs, vars["number"] = append(defs, "$number: Int!"), n
		fields = append(fields, "issue(number: $number) { id labels(first: 100) { nodes { id name } pageInfo { hasNextPage } } }")
	}
	for i, name := range names {
		v := fmt.Sprintf("l%d", i)
		defs, vars[v] = append(defs, "$"+v+": String!"), name
		fields = append(fields, fmt.Sprintf("%s: label(name: $%s) { id name }", v, v))
	}
	doc := "query NodeIDs(" + strings.Join(defs, ", ") + ") {\n  repository(owner: $owner, name: $name) {\n    " +
		strings.Join(fields, "\n    ") + "\n  }\n}"
	var data struct {
		Repository map[string]json.RawMessage `json:"repository"`
	}
	gerrs, err := t.graphql(ctx, doc, vars, &data)
	if err != nil {
		return err
	}
	if withIssue && gerrs.notFound("issue") {
		// REST would answer 404 too.
		return fmt.Errorf("issue %d: %w: %w", n, platforms.ErrNotFound, gerrs)
	}
	if len(gerrs) > 0 {
		return &restFallback{gerrs}
	}
	for k, raw := range data.Repository {
		if k == "issue" {
			var is struct {
				ID     string          `json:"id"`
				Labels labelConnection `json:"labels"`
			}
			if json.Unmarshal(raw, &is) == nil {
				t.ids.setIssue(n, is.ID)
				t.learnLabels(is.Labels)
			}
			continue
		}
		var l *struct{ ID, Name string }
		if json.Unmarshal(raw, &l) == nil && l != nil {
			t.ids.setLabel(l.Name, l.ID)
		}
	}
	if withIssue && t.ids.issue(n) == "" {
		return fmt.Errorf("issue %d: %w", n, platforms.ErrNotFound)
	}
	return nil
}

// createLabel creates label in the repository through REST and returns its
// node id. A label that exists in another spelling (422) is REST's to add.
func (t *Tracker) createLabel(ctx context.Context, name string) (string, error) {
	l, _, err := t.client.Issues.CreateLabel(ctx, t.owner, t.name, &gh.Label{Name: &name})
	if err != nil {
		var er *gh.ErrorResponse
		if errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusUnprocessableEntity {
			return "", &restFallback{fmt.Errorf("create label %q: %w", name, err)}
		}
		return "", fmt.Errorf("create label %q: %w", name, classify(err))
	}
	t.ids.setLabel(l.GetName(), l.GetNodeID())
	return l.GetNodeID(), nil
}

// graphqlErrors are an answer's "errors".
type graphqlErrors []struct {
	Type    string `json:"type"`
	Path    []any  `json:"path"`
	Message string `json:"message"`
}

func (e graphqlErrors) Error() string {
	var msgs []string
	for _, x := range e {
		msgs = append(msgs, strings.TrimSpace(x.Type+" "+x.Message))
	}
	return "graphql: " + strings.Join(msgs, "; ")
}

// secondaryLimited reports a secondary limit refusal, which REST shares: a
// mutation over the content creation limit fails with UNPROCESSABLE "was
// submitted too quickly" (cli/cli#4801, Azure/azure-sdk-tools#7226).
func (e graphqlErrors) secondaryLimited() bool {
	for _, x := range e {
		m := strings.ToLower(x.Message)
		if strings.Contains(m, "submitted too quickly") || strings.Contains(m, "secondary rate limit") {
			return true
		}
	}
	return false
}

// notFound reports a NOT_FOUND error whose path ends in field.
func (e graphqlErrors) notFound(field string) bool {
	for _, x := range e {
		if x.Type == "NOT_FOUND" && len(x.Path) > 0 && x.Path[len(x.Path)-1] == field {
			return true
		}
	}
	return false
}

// graphql posts one document and decodes its data into out. An HTTP error
// is classified as REST's are; a request the transport held for GraphQL's
// budget is a restFallback; errors in a 200 answer are returned for the
// caller to judge, next to whatever data came.
func (t *Tracker) graphql(ctx context.Context, doc string, vars map[string]any, out any) (graphqlErrors, error) {
	body, err := json.Marshal(map[string]any{"query": doc, "variables": vars})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.graphqlURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/vnd.github+json")
	resp, err := t.http.Do(req)
	if err != nil {
		if errors.Is(err, trackerhttp.ErrRateLimited) {
			// Held without being sent: GraphQL's own budget is spent until
			// its reset; REST's is another.
			return nil, &restFallback{err}
		}
		return nil, err
	}
	defer resp.Body.Close()
	if err := gh.CheckResponse(resp); err != nil {
		return nil, classify(err)
	}
	var ans struct {
		Data   json.RawMessage `json:"data"`
		Errors graphqlErrors   `json:"errors"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&ans); err != nil {
		return nil, fmt.Errorf("graphql answer: %w", err)
	}
	if len(ans.Data) > 0 && string(ans.Data) != "null" {
		if err := json.Unmarshal(ans.Data, out); err != nil {
			return nil, fmt.Errorf("graphql data: %w", err)
		}
	}
	return ans.Errors, nil
}
