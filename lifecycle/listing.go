package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// DefaultSearchMinProjects is how many projects must share a
// platforms.SearchScope before the slow cycles and the Poller list them with one search
// instead of one list call each. Below it the per-project list is cheaper:
// a repository's list answers 304 while nothing changes (free of GitHub's
// core limit), a search never does, and it spends the search limit
// (30 a minute on GitHub).
const DefaultSearchMinProjects = 2

// ListOpen lists the open tickets carrying label for each of projects,
// keyed by project name, each Ref.Project set (a project is a key only
// when its listing succeeded): one platforms.Searcher
// search per scope shared by at least DefaultSearchMinProjects projects,
// one Tracker.ListOpen per other project. So the calls of a slow cycle or a poll
// grow with lifecycle states and result pages, not with repositories.
//
// A search hit is a hint, not a reading: its labels may lag the ticket's
// (platforms.Searcher). Every caller re-reads a ticket under its claim lock
// before it writes (housekeeping's StaleJobDetector and LabelRepairer,
// claim.Service.RequeueLocked, ClaimListed, CancelDetector), so a stale hit costs a read,
// never a wrong write; a ticket the index does not show yet is found by a
// later cycle.
//
// A scope whose search fails with platforms.ErrSearchIncomplete (more hits
// than the platform serves), or is refused for good (platforms.ErrNotFound,
// platforms.ErrRejected: a token that reaches each project but not their
// group, such as GitLab project access tokens, gets 404 from the group's
// issue list), is listed project by project instead; any other failure is
// returned for the scope's projects, whose tickets are missing from the
// result, and the cycle is tried again on its next tick.
func ListOpen(ctx context.Context, projects []*Project, label string) (map[string][]*platforms.Ticket, error) {
	// Listings yield the quota's reserve to claims and run transitions
	// (trackerhttp.Priority); the writes that follow keep their priority.
	ctx = trackerhttp.WithPriority(ctx, trackerhttp.PriorityLow)
	sort.Slice(projects, func(i, j int) bool { return projects[i].Name < projects[j].Name })
	groups := map[platforms.SearchScope][]*Project{}
	var scopes []platforms.SearchScope
	var single []*Project
	for _, p := range projects {
		s, ok := p.Tracker.(platforms.Searcher)
		if !ok {
			single = append(single, p)
			continue
		}
		scope := s.SearchScope()
		if _, seen := groups[scope]; !seen {
			scopes = append(scopes, scope)
		}
		groups[scope] = append(groups[scope], p)
	}
	out := make(map[string][]*platforms.Ticket, len(projects))
	var errs []error
	for _, scope := range scopes {
		group := groups[scope]
		if len(group) < DefaultSearchMinProjects {
			single = append(single, group...)
			continue
		}
		hits, err := group[0].Tracker.(platforms.Searcher).ListAcross(ctx, scope, label)
		if errors.Is(err, platforms.ErrSearchIncomplete) || errors.Is(err, platforms.ErrNotFound) || errors.Is(err, platforms.ErrRejected) {
			single = append(single, group...)
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("search %s tickets of %d projects in %s: %w", label, len(group), scope, err))
			continue
		}
		for _, p := range group {
			out[p.Name] = []*platforms.Ticket{}
		}
		for _, t := range hits {
			for _, p := range group {
				if p.Tracker.(platforms.Searcher).Covers(t.Ref) {
					t.Ref.Project = p.Name
					out[p.Name] = append(out[p.Name], t)
					break
				}
			}
		}
	}
	for _, p := range single {
		tickets, err := p.Tracker.ListOpen(ctx, label)
		if err != nil {
			errs = append(errs, fmt.Errorf("list %s tickets of %s: %w", label, p.Name, err))
			continue
		}
		out[p.Name] = tickets
	}
	return out, errors.Join(errs...)
}
