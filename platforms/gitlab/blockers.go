package gitlab

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.BlockerReader = (*Tracker)(nil)

// OpenBlockers lists the open issues linked to the ticket as "is blocked by"
// (GitLab Premium's blocking issue links; on Free the list is empty). One
// API call; blockers in other projects are named "group/project#iid".
func (t *Tracker) OpenBlockers(ctx context.Context, ref platforms.Ref) ([]string, error) {
	iid, err := t.iid(ref)
	if err != nil {
		return nil, err
	}
	bs, err := t.api.blockedBy(ctx, t.repo, iid)
	if err != nil {
		return nil, fmt.Errorf("gitlab: blockers of %s: %w", ref.ID, err)
	}
	var open []string
	for _, b := range bs {
		if b.Open {
			open = append(open, b.Ref)
		}
	}
	slices.Sort(open)
	return slices.Compact(open), nil
}
