package housekeeping

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/pkg/queue"
)

// Defaults of DelayedPromoterConfig.
const (
	// DefaultDelayedInterval: a retry starts at most this late after its
	// backoff ends; short, since a cycle is one script call when nothing is due.
	DefaultDelayedInterval = time.Second
	// DefaultDelayedBatch bounds one script call, so a burst of due retries
	// never blocks Redis for long; a cycle repeats while batches come full.
	DefaultDelayedBatch = 100
)

// DelayedPromoterConfig configures a DelayedPromoter.
type DelayedPromoterConfig struct {
	Interval time.Duration
	Batch    int
	// Fence is called immediately before every promotion; see
	// StaleJobDetectorConfig.Fence.
	Fence  func(context.Context) error
	Logger *zap.Logger
}

// DelayedPromoter moves requests whose backoff is over (retries, and
// requests given back at a concurrency limit) from the delayed set
// agentsmith:queue:delayed to the tail of their queue level. Due times are
// Redis's clock (queue.Delay), so the promoter needs none of its own.
type DelayedPromoter struct {
	cfg   DelayedPromoterConfig
	queue *queue.Queue
	log   *zap.Logger
}

// NewDelayedPromoter wires a promoter for q's delayed set.
func NewDelayedPromoter(q *queue.Queue, cfg DelayedPromoterConfig) *DelayedPromoter {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultDelayedInterval
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultDelayedBatch
	}
	if cfg.Fence == nil {
		cfg.Fence = noFence
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &DelayedPromoter{cfg: cfg, queue: q, log: cfg.Logger.Named("DelayedPromoter")}
}

// Run promotes due requests every Interval until ctx is done.
func (p *DelayedPromoter) Run(ctx context.Context) error {
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		if err := p.Cycle(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("promote due requests", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Cycle promotes every request due now, a batch per script call.
func (p *DelayedPromoter) Cycle(ctx context.Context) error {
	total := 0
	defer func() {
		if total > 0 {
			p.log.Debug("promoted due requests", zap.Int("count", total))
		}
	}()
	for {
		if err := p.cfg.Fence(ctx); err != nil {
			return err
		}
		n, err := p.queue.PromoteDue(ctx, p.cfg.Batch)
		total += n
		if err != nil || n < p.cfg.Batch {
			return err
		}
	}
}
