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
	"github.com/agentsmithd/agentsmithd/platforms"
)

// ParkedKeeper keeps one ticket parked in AwaitingApproval: finishes a
// decision recorded and not carried out, fails one closed or without its
// trigger label, applies its gate's deadline (lifecycle/gate's
// Gate.Expire). It returns what it did, "" for nothing. Parked lists the
// tickets indexed as parked (keys.Parked), closed ones included.
type ParkedKeeper interface {
	Expire(ctx context.Context, ref platforms.Ref) (string, error)
	Parked(ctx context.Context) ([]platforms.Ref, error)
}

// GateKeeperConfig configures a GateKeeper.
type GateKeeperConfig struct {
	Interval time.Duration // default DefaultSlowInterval
	// Fence is checked before each ticket's keep; see
	// StaleJobDetectorConfig.Fence.
	Fence  func(context.Context) error
	Logger *zap.Logger
}

// GateKeeper lists every project's AwaitingApproval tickets each cycle and
// hands each to the ApprovalGate's Expire: a decision a crash left
// recorded is finished, a ticket without its trigger label fails
// (cancelled), a gate past its timeout escalates or fails. Tickets the
// parked index holds that the listing of their project missed (closed,
// or no longer parked) are read one by one and handed over too: a closed
// one fails (cancelled), one no longer parked leaves the index. One list
// call per project per cycle; writes only for a ticket due.
type GateKeeper struct {
	cfg    GateKeeperConfig
	claims *claim.Service
	keeper ParkedKeeper
	log    *zap.Logger
}

// NewGateKeeper wires a keeper of parked tickets.
func NewGateKeeper(claims *claim.Service, keeper ParkedKeeper, cfg GateKeeperConfig) *GateKeeper {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultSlowInterval
	}
	if cfg.Fence == nil {
		cfg.Fence = noFence
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &GateKeeper{cfg: cfg, claims: claims, keeper: keeper, log: cfg.Logger.Named("GateKeeper")}
}

// Run keeps parked tickets every Interval until ctx is done.
func (k *GateKeeper) Run(ctx context.Context) error {
	return loop(ctx, k.log, k.cfg.Interval, k.cfg.Interval, nil, nil, k.Cycle, nil)
}

// Cycle keeps every parked ticket once; errors are joined after all were
// tried.
func (k *GateKeeper) Cycle(ctx context.Context) error {
	projects := k.claims.Projects()
	listed, err := lifecycle.ListOpen(ctx, allProjects(projects), k.claims.Labels().Label(lifecycle.AwaitingApproval))
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("list %s tickets: %w", lifecycle.AwaitingApproval, err))
	}
	seen := map[string]bool{}
	keep := func(ref platforms.Ref) error {
		if err := k.cfg.Fence(ctx); err != nil {
			return err
		}
		out, err := k.keeper.Expire(trackerhttp.WithFence(ctx, k.cfg.Fence), ref)
		if err != nil {
			errs = append(errs, err)
		} else if out != "" {
			k.log.Info("parked ticket "+out, zap.String("ticket", ref.String()))
		}
		return nil
	}
	for _, name := range projects.Names() {
		for _, t := range listed[name] {
			seen[t.Ref.Key()] = true
			if err := keep(t.Ref); err != nil {
				return errors.Join(append(errs, err)...)
			}
		}
	}
	indexed, err := k.keeper.Parked(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	for _, ref := range indexed {
		if _, listedOK := listed[ref.Project]; seen[ref.Key()] || !listedOK {
			continue // kept above, or its project's listing failed (or it is retired)
		}
		if err := keep(ref); err != nil {
			return errors.Join(append(errs, err)...)
		}
	}
	return errors.Join(errs...)
}
