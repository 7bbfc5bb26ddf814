package lifecycle

import (
	"context"
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

// PollOnce claims the project's triggered tickets that look Pending
// (ClaimTriggered, one list call) and returns how many it claimed; the
// claims that failed are returned joined, after the others were made.
func (p *Poller) PollOnce(ctx context.Context, project string) (claimed int, err error) {
	res, err := p.claims.ClaimTriggered(ctx, project, SourcePoll, nil)
	return len(res), err
}
