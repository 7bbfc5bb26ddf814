package lifecycle

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Poller claims triggered tickets of the projects that opted in to polling.
// It runs on one replica at a time, under agentsmith:leader:poller.
type Poller struct {
	claims    *ClaimService
	intervals map[string]time.Duration // project name → poll interval
	log       *zap.Logger
}

// NewPoller polls each named project at its interval.
func NewPoller(claims *ClaimService, intervals map[string]time.Duration, log *zap.Logger) *Poller {
	if log == nil {
		log = zap.NewNop()
	}
	return &Poller{claims: claims, intervals: intervals, log: log.Named("poller")}
}

// Run polls until ctx is done.
func (p *Poller) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for name, every := range p.intervals {
		wg.Go(func() {
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				if _, err := p.PollOnce(ctx, name); err != nil && ctx.Err() == nil {
					p.log.Warn("poll failed", zap.String("project", name), zap.Error(err))
				}
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// PollOnce lists the project's open tickets with the trigger label (one
// paginated list call) and claims each one that looks Pending.
func (p *Poller) PollOnce(ctx context.Context, project string) (claimed int, err error) {
	pr, ok := p.claims.Projects()[project]
	if !ok {
		return 0, fmt.Errorf("poll: unknown project %q", project)
	}
	tickets, err := pr.Tracker.ListOpen(ctx, pr.TriggerLabel)
	if err != nil {
		return 0, fmt.Errorf("poll %s: list: %w", project, err)
	}
	for _, t := range tickets {
		if p.claims.PreCheck(pr, t) != "" {
			continue
		}
		res, err := p.claims.Claim(ctx, t.Ref, SourcePoll, 1)
		if err != nil {
			p.log.Warn("poll claim", zap.String("ticketId", t.Ref.ID), zap.Error(err))
			continue
		}
		if res.Outcome == Claimed {
			claimed++
		}
	}
	return claimed, nil
}
