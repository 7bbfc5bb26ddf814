package azuredevops

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/microsoft/azure-devops-go-api/azuredevops/v7/workitemtracking"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.BlockerReader = (*Tracker)(nil)

// predecessorRel is the relation a work item has to each of its
// predecessors: the reverse end of the Dependency link type
// (https://learn.microsoft.com/azure/devops/boards/queries/link-type-reference#dependency).
const predecessorRel = "System.LinkTypes.Dependency-Reverse"

// OpenBlockers lists the ticket's predecessors that are not in a closed
// state (closedStates). Two API calls: the work item with
// $expand=relations, then its predecessors' states in one batch read.
func (t *Tracker) OpenBlockers(ctx context.Context, ref platforms.Ref) ([]string, error) {
	id, err := t.workItemID(ref)
	if err != nil {
		return nil, err
	}
	c, err := t.sdk.client(ctx)
	if err != nil {
		return nil, fmt.Errorf("azuredevops: blockers of %s: %w", ref.ID, err)
	}
	wi, err := c.GetWorkItem(ctx, workitemtracking.GetWorkItemArgs{Id: &id, Project: &t.project,
		Expand: &workitemtracking.WorkItemExpandValues.Relations})
	if err != nil {
		return nil, fmt.Errorf("azuredevops: blockers of %s: %w", ref.ID, classify(err))
	}
	var ids []int
	if wi.Relations != nil {
		for _, r := range *wi.Relations {
			if r.Rel == nil || *r.Rel != predecessorRel || r.Url == nil {
				continue
			}
			if n, ok := workItemIDOfURL(*r.Url); ok {
				ids = append(ids, n)
			}
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	org, _, _ := strings.Cut(t.locator, "/")
	var open []string
	fields := []string{"System.Id", fieldState, fieldProject}
	for start := 0; start < len(ids); start += batchSize {
		chunk := ids[start:min(start+batchSize, len(ids))]
		items, err := c.GetWorkItemsBatch(ctx, workitemtracking.GetWorkItemsBatchArgs{
			WorkItemGetRequest: &workitemtracking.WorkItemBatchGetRequest{Ids: &chunk, Fields: &fields,
				ErrorPolicy: ptr(workitemtracking.WorkItemErrorPolicyValues.Omit)},
			Project: &t.project,
		})
		if err != nil {
			return nil, fmt.Errorf("azuredevops: blockers of %s: read predecessors: %w", ref.ID, classify(err))
		}
		if items == nil {
			continue
		}
		for _, p := range *items {
			if p.Id == nil || p.Fields == nil { // omitted: deleted, blocks nothing
				continue
			}
			f := *p.Fields
			if !isOpen(stringField(f, fieldState)) {
				continue
			}
			loc := t.locator
			if pr := stringField(f, fieldProject); pr != "" {
				loc = Locator(org, pr)
			}
			open = append(open, FormatID(loc, *p.Id))
		}
	}
	slices.Sort(open)
	return open, nil
}

// workItemIDOfURL reads the id at the end of a work item's API URL
// (".../_apis/wit/workItems/123").
func workItemIDOfURL(u string) (int, bool) {
	i := strings.LastIndexByte(u, '/')
	if i < 0 || !strings.Contains(strings.ToLower(u[:i]), "/_apis/wit/workitems") {
		return 0, false
	}
	n, err := strconv.Atoi(u[i+1:])
	return n, err == nil && n > 0
}
