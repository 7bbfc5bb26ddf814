package claim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// ClaimTriggered lists a project's open tickets carrying its trigger label
// (one paginated list call) and claims, as source, each one that looks
// Pending. It is the one loop behind both ways a trigger is found without a
// webhook: the Poller (projects that poll, at their interval, under the
// poller lease) and the TriggerSweeper (projects that do not, fenced by the
// housekeeping lease).
//
// fence, when set, runs right before each claim; its error ends the pass.
// One ticket's failed claim does not stop the others: the claims that
// enqueued a request are returned with the other claims' errors joined.
func (c *Service) ClaimTriggered(ctx context.Context, project, source string, fence func(context.Context) error) ([]Result, error) {
	p, ok := c.projects.Watched()[project]
	if !ok {
		return nil, fmt.Errorf("claim triggered tickets: unknown project %q", project)
	}
	// Polling yields the quota's reserve to claims and run transitions.
	tickets, err := p.Tracker.ListOpen(trackerhttp.WithPriority(ctx, trackerhttp.PriorityLow), p.TriggerLabel)
	if err != nil {
		return nil, fmt.Errorf("claim triggered tickets of %s: list: %w", project, err)
	}
	return c.ClaimListed(ctx, p, tickets, source, fence)
}

// ClaimListed is ClaimTriggered for tickets the caller listed itself (the
// TriggerSweeper lists many projects with one search): each one that looks
// Pending is claimed, and the claim reads it afresh under its claim lock, so
// a listing that lags (a search index) never decides a write. A ticket the
// tracker refused for good is skipped while it is listed unchanged
// (ClaimSnapshot).
func (c *Service) ClaimListed(ctx context.Context, p *lifecycle.Project, tickets []*platforms.Ticket, source string, fence func(context.Context) error) ([]Result, error) {
	var claimed []Result
	var errs []error
	for _, t := range tickets {
		if c.PreCheck(p, t) != "" {
			continue
		}
		if fence != nil {
			if err := fence(ctx); err != nil {
				return claimed, errors.Join(append(errs, fmt.Errorf("claim triggered tickets of %s: %w", p.Name, err))...)
			}
		}
		res, err := c.ClaimSnapshot(ctx, t, source, 1, "", time.Time{})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if res.Outcome == lifecycle.Claimed {
			claimed = append(claimed, res)
		}
	}
	return claimed, errors.Join(errs...)
}
