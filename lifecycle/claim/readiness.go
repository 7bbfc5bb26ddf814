package claim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// blockedPrefix starts the NotEligible reason of a ticket with open blockers.
const blockedPrefix = "blocked by "

// IsBlockedReason reports whether a NotEligible reason is "blocked by …".
func IsBlockedReason(reason string) bool { return strings.HasPrefix(reason, blockedPrefix) }

// checkBlockers applies the project's readiness rule to a ticket that passed
// the other pre-checks: one more tracker call. A blocked ticket is recorded
// in keys.Blocked(project) (field ticket id → its open blockers) so that it is
// claimed again when a blocker closes; a ready one is forgotten there.
// It returns the NotEligible reason, "" when the ticket may be claimed.
func (c *Service) checkBlockers(ctx context.Context, p *lifecycle.Project, ref platforms.Ref) (string, error) {
	if !p.RequireNoOpenBlockers {
		return "", nil
	}
	br, ok := p.Tracker.(platforms.BlockerReader)
	if !ok {
		return "", nil // config validation refuses this; stay permissive at run time
	}
	blockers, err := br.OpenBlockers(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("claim %s: read blockers: %w", ref, err)
	}
	if len(blockers) == 0 {
		c.forgetBlocked(ctx, ref)
		return "", nil
	}
	if err := c.rdb.HSet(ctx, keys.Blocked(p.Name), ref.ID, strings.Join(blockers, "\n")).Err(); err != nil {
		return "", fmt.Errorf("claim %s: record blocked ticket: %w: %w", ref, ErrRedisUnavailable, err)
	}
	return blockedPrefix + strings.Join(blockers, ", "), nil
}

// forgetBlocked drops ref from its project's blocked tickets (it became
// ready, or it no longer waits for a claim at all).
func (c *Service) forgetBlocked(ctx context.Context, ref platforms.Ref) {
	if err := c.rdb.HDel(ctx, keys.Blocked(ref.Project), ref.ID).Err(); err != nil {
		c.log.Warn("forget blocked ticket (it is retried once more)", zap.String("ticketId", ref.ID), zap.Error(err))
	}
}

// RetryBlocked claims again the project's tickets recorded as blocked. With
// closed = "" it retries all of them (a slow housekeeping cycle: blockers in
// other projects or repositories send no webhook here); otherwise only those
// the ticket with id closed was blocking (a close event). It returns how
// many were claimed.
func (c *Service) RetryBlocked(ctx context.Context, project, closed, source string) (int, error) {
	p, ok := c.projects.Watched()[project]
	if !ok || !p.RequireNoOpenBlockers {
		return 0, nil
	}
	blocked, err := c.rdb.HGetAll(ctx, keys.Blocked(project)).Result()
	if err != nil {
		return 0, fmt.Errorf("retry blocked tickets of %s: %w: %w", project, ErrRedisUnavailable, err)
	}
	claimed := 0
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(blocked)) {
		if closed != "" && !slices.Contains(strings.Split(blocked[id], "\n"), closed) {
			continue
		}
		ref := platforms.Ref{Platform: p.Platform, Project: project, ID: id}
		res, err := c.Claim(ctx, ref, source, 1)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if res.Outcome == lifecycle.Claimed {
			claimed++
		}
	}
	return claimed, errors.Join(errs...)
}
