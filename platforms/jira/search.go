package jira

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.Searcher = (*Tracker)(nil)

// SearchScope is the Jira site (its API root) seen through this tracker's
// credentials: one JQL search covers every project the account can browse.
func (t *Tracker) SearchScope() platforms.SearchScope { return t.scope }

// Covers reports whether ref is an issue of this tracker's project. Jira
// project keys are case-insensitive in JQL and URLs. A JQL scope is
// searched with its own query (SearchScope.Filter), so every issue its
// search returns is one of its own.
func (t *Tracker) Covers(ref platforms.Ref) bool {
	key, _, err := ParseID(ref.ID)
	if t.jql != "" {
		return err == nil && ref.Platform == Platform
	}
	return err == nil && ref.Platform == Platform && strings.EqualFold(key, t.key)
}

// AcrossQuery is the JQL ListAcross sends for label: ListQuery without the
// project clause, so one search serves every project of the site.
func AcrossQuery(label string) string {
	return fmt.Sprintf(`labels = %s AND statusCategory != Done ORDER BY key ASC`, jqlString(label))
}

// ListAcross lists the open issues labelled label in every project of the
// site the account can browse, with the deployment's search (Cloud's
// search/jql, Data Center's search), following pagination. Cloud's search
// index lags writes; only this tracker's own recent writes are reconciled
// (reconcileIssues), so another project's freshly labelled issue may show
// up a cycle later: hits are hints (platforms.Searcher), acted on after a
// fresh read. Ref.Project is unset.
func (t *Tracker) ListAcross(ctx context.Context, scope platforms.SearchScope, label string) ([]*platforms.Ticket, error) {
	if scope.Platform != Platform || scope != t.scope {
		return nil, fmt.Errorf("jira: search %s: not this tracker's site and credentials", scope)
	}
	jql := AcrossQuery(label)
	if t.jql != "" {
		jql = ScopeQuery(t.jql, label)
	}
	out, err := t.search(ctx, jql, label, func(is *apiIssue) *platforms.Ticket { return issueTicket(t.site, is) })
	if err != nil {
		return nil, fmt.Errorf("jira: search open issues labelled %q across %s: %w", label, scope, err)
	}
	return out, nil
}
