package jira

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// A JQL scope makes one project of the issues a query selects across the
// site: `jql: "project in (PAY, OPS) AND component = Payments"`. What a
// project key gives for free has to be asked instead:
//
//   - Listing (ListOpen, the poller, housekeeping) ANDs the lifecycle
//     clauses onto the scope (ScopeQuery): one search, whatever the number
//     of projects the scope spans, never merged with the site-wide search
//     of key-bound projects (SearchScope.Filter).
//   - A webhook cannot say whether its issue is in the scope: its payload
//     names a project key, and the admin webhook's own JQL filter accepts
//     only issueKey, project, issuetype, status, assignee, reporter and
//     issue properties
//     (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-webhooks/#api-rest-api-3-webhook-post,
//     "Only a subset of JQL can be used"), so a component or label scope
//     cannot be left to it. The receiver routes the delivery by its secret
//     and the claim asks InScope before it writes.
//   - Write access (trigger.allow.write) is asked of the issue's own
//     project (PermissionScope, MayWriteIn).

// MaxScopeLength bounds a configured JQL scope: it is sent in every search
// and every claim's membership read.
const MaxScopeLength = 2000

// orderBy finds an ORDER BY clause, which the scope must leave to the
// queries built on it.
var orderBy = regexp.MustCompile(`(?i)\border\s+by\b`)

// CheckScope validates a configured JQL scope as far as it can be without
// the site: Jira itself parses it (agentsmithd check runs it once). The
// config's validation and New both ask it; its messages read after the
// field's name ("jira.jql: must not be blank").
func CheckScope(jql string) error {
	switch {
	case strings.TrimSpace(jql) == "":
		return errors.New("must not be blank")
	case len(jql) > MaxScopeLength:
		return fmt.Errorf("is %d bytes; at most %d", len(jql), MaxScopeLength)
	case !utf8.ValidString(jql) || strings.ContainsFunc(jql, func(r rune) bool { return r < ' ' && r != '\t' && r != '\n' && r != '\r' }):
		return errors.New("holds control characters or invalid UTF-8")
	case orderBy.MatchString(jql):
		return errors.New("must not have an ORDER BY clause: the daemon orders its own searches")
	}
	return nil
}

// ScopeQuery is the JQL that lists the open issues of scope carrying label:
// the scope in parentheses (so its ORs stay inside) with ListQuery's
// clauses ANDed on.
func ScopeQuery(scope, label string) string {
	return fmt.Sprintf(`(%s) AND labels = %s AND statusCategory != Done ORDER BY key ASC`, scope, jqlString(label))
}

// memberQuery is the JQL that finds ref's issue if it is in scope.
func memberQuery(scope, key string) string {
	return fmt.Sprintf(`issuekey = %s AND (%s)`, jqlString(key), scope)
}

var _ platforms.Scoped = (*Tracker)(nil)

// InScope reports whether ref's issue is selected by the tracker's JQL
// scope now: one search for the issue key ANDed with the scope. Cloud's
// search/jql reads a lagging index, so the issue is passed as
// reconcileIssues (its id is known from the read the claim made just
// before): a component set a moment ago counts
// (https://developer.atlassian.com/cloud/jira/platform/search-and-reconcile/).
// Data Center's search is consistent. A tracker bound to a project key
// has every issue of its project in scope.
func (t *Tracker) InScope(ctx context.Context, ref platforms.Ref) (bool, error) {
	key, err := t.issueKey(ref)
	if err != nil || t.jql == "" {
		return err == nil, err
	}
	jql := memberQuery(t.jql, key)
	var res searchResult
	if t.cloud {
		req := jqlSearchRequest{JQL: jql, Fields: []string{"id"}, MaxResults: 1}
		if id, ok := t.recent.idOf(key); ok {
			req.ReconcileIssues = []int64{id}
		}
		err = t.do(ctx, http.MethodPost, t.api+"search/jql", req, &res)
	} else {
		q := url.Values{"jql": {jql}, "fields": {"id"}, "maxResults": {"1"}}
		err = t.do(ctx, http.MethodGet, t.api+"search?"+q.Encode(), nil, &res)
	}
	if err != nil {
		return false, fmt.Errorf("jira: is %s in the JQL scope: %w", key, err)
	}
	for _, is := range res.Issues {
		if strings.EqualFold(is.Key, key) {
			return true, nil
		}
	}
	return false, nil
}

// checkScope runs the scope once, as `agentsmithd check` does for a
// project key's GET: Jira parses it and names what is wrong (an unknown
// field, a project that does not exist or the token cannot browse).
func (t *Tracker) checkScope(ctx context.Context) platforms.CheckResult {
	const name = "jql scope"
	var res searchResult
	var err error
	if t.cloud {
		req := jqlSearchRequest{JQL: t.jql, Fields: []string{"id"}, MaxResults: 1}
		err = t.do(ctx, http.MethodPost, t.api+"search/jql", req, &res)
	} else {
		q := url.Values{"jql": {t.jql}, "fields": {"id"}, "maxResults": {"1"}}
		err = t.do(ctx, http.MethodGet, t.api+"search?"+q.Encode(), nil, &res)
	}
	if err != nil {
		return platforms.Fail(name, "Jira refused the scope: "+err.Error(),
			"fix jira.jql: try it in Jira's issue search as the token's user")
	}
	return platforms.OK(name, "Jira accepts it")
}
