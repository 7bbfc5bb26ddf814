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
	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// ParkedKeeper keeps tickets parked in AwaitingApproval (lifecycle/gate's
// Gate). Expire keeps one: finishes a decision recorded and not carried
// out, fails one closed or without its trigger label (cancelled), applies
// its gate's deadline, and returns what it did, "" for nothing. Listed
// carries out the decision labels (approved, rejected) on a listing's
// tickets, each read afresh.
type ParkedKeeper interface {
	Expire(ctx context.Context, ref platforms.Ref) (string, error)
	Listed(ctx context.Context, p *lifecycle.Project, tickets []*platforms.Ticket) error
	// Reindex mends a project's entries in the parked index
	// (lifecycle.Park) from its listing (lifecycle/gate's Gate.Reindex),
	// keeping as Expire does each entry the listing missed (a closed
	// ticket's among them).
	Reindex(ctx context.Context, project string, listed []*platforms.Ticket, listedAt time.Time, grace time.Duration) (added, dropped int, err error)
}

// GateKeeperConfig configures a GateKeeper.
type GateKeeperConfig struct {
	Interval time.Duration // default DefaultSlowInterval
	// Fence is checked before each ticket's keep; see
	// StaleJobDetectorConfig.Fence.
	Fence func(context.Context) error
	// Clock dates the listing the parked index is mended from (default
	// the wall clock).
	Clock  func() time.Time
	Logger *zap.Logger
}

// GateKeeper lists every project's AwaitingApproval tickets each cycle and
// hands each to the ApprovalGate's Expire: a decision a crash left
// recorded is finished, a ticket without its trigger label fails
// (cancelled), a gate past its timeout escalates or fails. A listed
// ticket that carries a decision label has it carried out: a label's
// webhook is answered before its decision is made, so a replica that dies
// in between, or finds the ticket's lock held, leaves the label on the
// ticket, and on a project without polling nothing else reads it again. The listing then mends the parked index the status page reads
// (Reindex): a ticket parked without its entry gets one; an entry the
// listing missed is read afresh, and its ticket, closed while parked,
// fails (cancelled) and leaves the index, or, no longer parked, leaves the
// index. One list call per project per cycle, one read per entry the
// listing missed; writes only for a ticket due, decided or to mend in the
// index.
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
	if cfg.Clock == nil {
		cfg.Clock = wallclock.Now
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
	listedAt := k.cfg.Clock()
	listed, err := lifecycle.ListOpen(ctx, allProjects(projects), k.claims.Labels().Label(lifecycle.AwaitingApproval))
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("list %s tickets: %w", lifecycle.AwaitingApproval, err))
	}
	for _, name := range projects.Names() {
		tickets, ok := listed[name]
		if !ok {
			continue // not listed: its index entries stay as they are
		}
		// Decisions first: a person's decision label stands before the
		// deadline it may have beaten.
		if err := k.cfg.Fence(ctx); err != nil {
			return errors.Join(append(errs, err)...)
		}
		if err := k.keeper.Listed(trackerhttp.WithFence(ctx, k.cfg.Fence), projects[name], tickets); err != nil {
			errs = append(errs, err)
		}
		for _, t := range tickets {
			if err := k.cfg.Fence(ctx); err != nil {
				return errors.Join(append(errs, err)...)
			}
			out, err := k.keeper.Expire(trackerhttp.WithFence(ctx, k.cfg.Fence), t.Ref)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if out != "" {
				k.log.Info("parked ticket "+out, zap.String("ticket", t.Ref.String()))
			}
		}
		if err := k.cfg.Fence(ctx); err != nil {
			return errors.Join(append(errs, err)...)
		}
		added, dropped, err := k.keeper.Reindex(trackerhttp.WithFence(ctx, k.cfg.Fence), name, tickets, listedAt, k.cfg.Interval)
		if err != nil {
			errs = append(errs, err)
		}
		if added+dropped > 0 {
			k.log.Info("parked index mended", zap.String("project", name), zap.Int("added", added), zap.Int("dropped", dropped))
		}
	}
	return errors.Join(errs...)
}
