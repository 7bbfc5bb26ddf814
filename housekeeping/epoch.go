package housekeeping

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
)

// EpochWatcherConfig configures an EpochWatcher.
type EpochWatcherConfig struct {
	Interval time.Duration // default DefaultFastInterval
	// Fence must pass before a new epoch is written: a leader that lost its
	// lease leaves the epoch missing, so the next leader sees the loss too.
	Fence  func(context.Context) error
	Logger *zap.Logger
}

// EpochWatcher detects that Redis lost its data: the epoch key is written
// once per dataset, so its absence means the queue, heartbeats and in-flight
// index are gone too. It then triggers the slow repairs at once, instead of
// waiting for the next slow cycle (the specification's 10 minutes).
type EpochWatcher struct {
	cfg    EpochWatcherConfig
	rdb    redis.UniversalClient
	onLoss []func()
	log    *zap.Logger
	// seen: this watcher has read or written the epoch, so a missing one
	// is a loss it saw happen, not a Redis it meets empty at start (a new
	// one, or one that lost its data while no daemon ran: the two look
	// alike from here).
	seen bool
}

// NewEpochWatcher calls each onLoss function when the epoch is missing.
func NewEpochWatcher(rdb redis.UniversalClient, cfg EpochWatcherConfig, onLoss ...func()) *EpochWatcher {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultFastInterval
	}
	if cfg.Fence == nil {
		cfg.Fence = noFence
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &EpochWatcher{cfg: cfg, rdb: rdb, onLoss: onLoss, log: cfg.Logger.Named("EpochWatcher")}
}

// Run checks the epoch every Interval until ctx is done.
func (w *EpochWatcher) Run(ctx context.Context) error {
	t := time.NewTicker(w.cfg.Interval)
	defer t.Stop()
	for {
		if err := w.Check(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("epoch check failed", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Check writes a new epoch if none exists and reports the loss.
func (w *EpochWatcher) Check(ctx context.Context) error {
	n, err := w.rdb.Exists(ctx, keys.Epoch()).Result()
	if err != nil {
		return fmt.Errorf("read epoch: %w", err)
	}
	if n == 1 {
		w.seen = true
		return nil
	}
	if err := w.cfg.Fence(ctx); err != nil {
		return fmt.Errorf("write epoch: %w", err)
	}
	created, err := w.rdb.SetNX(ctx, keys.Epoch(), redislock.NewToken(), 0).Result()
	if err != nil {
		return fmt.Errorf("write epoch: %w", err)
	}
	if created {
		if w.seen {
			w.log.Warn("Redis lost its data while the daemon ran; reconciling from the trackers now " +
				"(in-progress tickets once Redis has been up past the restart grace)")
		} else {
			w.log.Info("Redis holds no agentsmithd data yet (a new Redis, or one emptied while no daemon ran): " +
				"reading the tickets' state from the trackers' labels; normal on a first start")
		}
		w.seen = true
		for _, f := range w.onLoss {
			f()
		}
	}
	return nil
}
