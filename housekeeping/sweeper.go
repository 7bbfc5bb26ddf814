package housekeeping

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
)

// TriggerSweeperConfig configures a TriggerSweeper.
type TriggerSweeperConfig struct {
	Interval time.Duration // default DefaultSlowInterval
	// Fence is checked right before every claim's write; see
	// StaleJobDetectorConfig.Fence.
	Fence  func(context.Context) error
	Logger *zap.Logger
}

// TriggerSweeper claims triggered Pending tickets that no webhook brought
// in: deliveries refused while Redis or the tracker was down (platforms do
// not redeliver on their own), and reverted tickets whose reclaim failed.
// Without it a webhook-only project would keep such tickets Pending until a
// human touched them. One list call per swept project per cycle.
//
// It sweeps the claim service's projects that do not poll (a project that
// polls is already listed by the Poller), and retries the tickets recorded
// as blocked of the projects requiring readiness every cycle (a blocker in
// another repository or project sends no close event here).
type TriggerSweeper struct {
	cfg    TriggerSweeperConfig
	claims *lifecycle.ClaimService
	log    *zap.Logger
}

// NewTriggerSweeper wires a sweeper.
func NewTriggerSweeper(claims *lifecycle.ClaimService, cfg TriggerSweeperConfig) *TriggerSweeper {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultSlowInterval
	}
	if cfg.Fence == nil {
		cfg.Fence = noFence
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &TriggerSweeper{cfg: cfg, claims: claims, log: cfg.Logger.Named("TriggerSweeper")}
}

// Run sweeps every Interval until ctx is done.
func (s *TriggerSweeper) Run(ctx context.Context) error {
	return loop(ctx, s.log, s.cfg.Interval, s.cfg.Interval, nil, nil, s.Sweep, s.Sweep)
}

// Sweep lists each project's open triggered tickets and claims those that
// look Pending, then retries the tickets recorded as blocked.
func (s *TriggerSweeper) Sweep(ctx context.Context) error {
	ctx = trackerhttp.WithFence(ctx, s.cfg.Fence)
	var errs []error
	projects := s.claims.Projects()
	for _, name := range projects.Names() {
		if projects[name].PollInterval > 0 {
			continue
		}
		claimed, err := s.claims.ClaimTriggered(ctx, name, lifecycle.SourceSweep, s.cfg.Fence)
		if err != nil {
			errs = append(errs, err)
		}
		for _, res := range claimed {
			s.log.Info("claimed a triggered ticket no webhook brought in", zap.String("ticketId", res.Request.Ref.ID),
				zap.String("platform", res.Request.Ref.Platform), zap.String("project", name), zap.Int("attempt", res.Request.Attempt))
		}
	}
	for _, name := range projects.Names() {
		if !projects[name].RequireNoOpenBlockers {
			continue
		}
		if err := s.cfg.Fence(ctx); err != nil {
			return fmt.Errorf("sweep blocked tickets of %s: %w", name, err)
		}
		n, err := s.claims.RetryBlocked(ctx, name, "", lifecycle.SourceSweep)
		if err != nil {
			errs = append(errs, err)
		}
		if n > 0 {
			s.log.Info("claimed tickets whose blockers closed", zap.String("project", name), zap.Int("claimed", n))
		}
	}
	return errors.Join(errs...)
}
