package gitlab

import (
	"context"
	"fmt"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.PermissionChecker = (*Tracker)(nil)

// DeveloperAccess is GitLab's Developer access level, the lowest that can
// push to the repository (https://docs.gitlab.com/api/members/#roles).
const DeveloperAccess = 30

// MayWrite reports whether username is a member of the project (directly
// or through its groups) with Developer access or higher.
func (t *Tracker) MayWrite(ctx context.Context, actor string) (bool, error) {
	if actor == "" {
		return false, nil
	}
	level, err := t.api.memberAccess(ctx, t.repo, actor)
	if err != nil {
		return false, fmt.Errorf("gitlab: access level of %q: %w", actor, err)
	}
	return level >= DeveloperAccess, nil
}

var _ platforms.LabelHistory = (*Tracker)(nil)

// LabelAddedBy reads the resource label events.
func (t *Tracker) LabelAddedBy(ctx context.Context, ref platforms.Ref, label string) (string, error) {
	iid, err := t.iid(ref)
	if err != nil {
		return "", err
	}
	who, err := t.api.labelAddedBy(ctx, t.repo, iid, label)
	if err != nil {
		return "", fmt.Errorf("gitlab: label events of %s: %w", ref.ID, err)
	}
	return who, nil
}

var _ platforms.TeamChecker = (*Tracker)(nil)

// InTeam reports whether username is an active member of the group (its
// full path, e.g. "acme/reviewers"), directly or through a parent group,
// at any access level: GitLab calls teams groups.
func (t *Tracker) InTeam(ctx context.Context, actor, group string) (bool, error) {
	if actor == "" || group == "" {
		return false, nil
	}
	level, err := t.api.groupAccess(ctx, group, actor)
	if err != nil {
		return false, fmt.Errorf("gitlab: membership of %q in group %q: %w", actor, group, err)
	}
	return level > 0, nil
}
