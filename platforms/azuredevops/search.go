package azuredevops

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.Searcher = (*Tracker)(nil)

// SearchScope is the organisation seen through this tracker's token: one
// WIQL query without a project clause spans every project the token can
// read, and work item ids are unique across them.
func (t *Tracker) SearchScope() platforms.SearchScope { return t.scope }

// Covers reports whether ref is a work item of this tracker's project
// (organisation and project names are case-insensitive).
func (t *Tracker) Covers(ref platforms.Ref) bool {
	repo, _, err := ParseID(ref.ID)
	return err == nil && ref.Platform == Platform && strings.EqualFold(repo, t.locator)
}

// AcrossQuery is the WIQL ListAcross sends for label: ListQuery without
// its project clause, so it spans the organisation
// (https://learn.microsoft.com/azure/devops/boards/queries/wiql-syntax:
// a query without [System.TeamProject] is not scoped to a project).
func AcrossQuery(label string) string {
	return strings.Replace(ListQuery(label), "[System.TeamProject] = @project AND ", "", 1)
}

// ListAcross lists the open work items tagged label in every project of
// the organisation with one organisation-level query (POST
// {org}/_apis/wit/wiql) and organisation-level batch reads of at most 200
// ids each (POST {org}/_apis/wit/workitemsbatch), each item's
// System.TeamProject naming its project. Ref.Project is unset. WIQL reads
// the work item store, not a search index, but a hit is still only a
// hint (platforms.Searcher): it is acted on after a fresh read.
func (t *Tracker) ListAcross(ctx context.Context, scope platforms.SearchScope, label string) ([]*platforms.Ticket, error) {
	if scope.Platform != Platform || scope != t.scope {
		return nil, fmt.Errorf("azuredevops: query %s: not this tracker's organisation and token", scope)
	}
	items, err := t.queryItems(ctx, AcrossQuery(label), nil)
	if err != nil {
		return nil, fmt.Errorf("azuredevops: list open work items tagged %q across %s: %w", label, t.org, err)
	}
	out := make([]*platforms.Ticket, 0, len(items))
	for i := range items {
		wi := &items[i]
		if wi.Rev == nil {
			continue
		}
		f := map[string]any{}
		if wi.Fields != nil {
			f = *wi.Fields
		}
		project := stringField(f, fieldProject)
		if project == "" || strings.ContainsAny(project, "/#") {
			continue // cannot be placed in a project: no project claims it
		}
		out = append(out, t.ticketIn(wi, f, project, Locator(t.org, project), ""))
	}
	return out, nil
}
