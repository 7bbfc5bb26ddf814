package housekeeping

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
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
// human touched them. One list call per swept project per cycle, or one
// search per search scope and trigger label (lifecycle.ListOpen).
//
// It sweeps the claim service's projects that do not poll (a project that
// polls is already listed by the Poller), and retries the tickets recorded
// as blocked of the projects requiring readiness every cycle (a blocker in
// another repository or project sends no close event here).
type TriggerSweeper struct {
	cfg    TriggerSweeperConfig
	claims *claim.Service
	log    *zap.Logger
}

// NewTriggerSweeper wires a sweeper.
func NewTriggerSweeper(claims *claim.Service, cfg TriggerSweeperConfig) *TriggerSweeper {
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
	// Projects sharing a trigger label and a search scope are listed with
	// one search (lifecycle.ListOpen); each claim reads its ticket afresh.
	projects := s.claims.Projects()
	byLabel := map[string][]*lifecycle.Project{}
	for _, name := range projects.Names() {
		if p := projects[name]; p.PollInterval == 0 {
			byLabel[p.TriggerLabel] = append(byLabel[p.TriggerLabel], p)
		}
	}
	for label, ps := range byLabel {
		listed, err := lifecycle.ListOpen(ctx, ps, label)
		if err != nil {
			errs = append(errs, fmt.Errorf("sweep triggered tickets: %w", err))
		}
		for _, p := range ps {
			tickets, ok := listed[p.Name]
			if !ok {
				continue
			}
			claimed, err := s.claims.ClaimListed(ctx, p, tickets, lifecycle.SourceSweep, s.cfg.Fence)
			if err != nil {
				errs = append(errs, err)
			}
			for _, res := range claimed {
				s.log.Info("claimed a triggered ticket no webhook brought in", zap.String("ticketId", res.Request.Ref.ID),
					zap.String("platform", res.Request.Ref.Platform), zap.String("project", p.Name), zap.Int("attempt", res.Request.Attempt))
			}
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
