package housekeeping

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// OutcomeWriterConfig configures an OutcomeWriter.
type OutcomeWriterConfig struct {
	Interval time.Duration // default DefaultFastInterval
	// Fence is checked right before every write; see
	// StaleJobDetectorConfig.Fence.
	Fence func(context.Context) error
	// LockTTL is how long the writer holds a ticket's run lock while it
	// writes (the consumers' heartbeat TTL); WriteTimeout bounds one write.
	LockTTL      time.Duration
	WriteTimeout time.Duration
	// Clock reads the time (default: the claim service's); a record's
	// retry backoff is measured on it.
	Clock  func() time.Time
	Logger *zap.Logger
}

// OutcomeWriter writes the outcomes of runs whose pipeline ended but whose
// Done or Failed the tracker did not take (runstate.Outcome): those the run
// handed over after its final write timed out, and those of runs that died
// between recording and writing them (their replica killed). Each is
// written from its record alone, once the tracker answers again, and never
// by running the pipeline again; StaleJobDetector leaves such tickets to it.
type OutcomeWriter struct {
	cfg      OutcomeWriterConfig
	rdb      redis.UniversalClient
	finisher *consumer.OutcomeFinisher
	log      *zap.Logger
}

// NewOutcomeWriter wires a writer.
func NewOutcomeWriter(rdb redis.UniversalClient, claims *claim.Service, cfg OutcomeWriterConfig) *OutcomeWriter {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultFastInterval
	}
	if cfg.Fence == nil {
		cfg.Fence = noFence
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	log := cfg.Logger.Named("OutcomeWriter")
	f := consumer.NewOutcomeFinisher(rdb, claims, consumer.OutcomeFinisherConfig{Fence: cfg.Fence, LockTTL: cfg.LockTTL,
		WriteTimeout: cfg.WriteTimeout, Clock: cfg.Clock, Logger: log})
	return &OutcomeWriter{cfg: cfg, rdb: rdb, finisher: f, log: log}
}

// Run writes every Interval until ctx is done.
func (w *OutcomeWriter) Run(ctx context.Context) error {
	return loop(ctx, w.log, w.cfg.Interval, w.cfg.Interval, nil, w.Cycle, nil, nil)
}

// Cycle writes every waiting outcome no live run is still writing, oldest
// first: one whose ticket's lock is free (the run handed it over), or still
// held by the run that recorded it while that run's replica is gone. After
// one failed write the rest of that project's records wait for the next
// cycle, so a tracker that hangs costs one write's timeout per cycle, not
// one per record, and the other trackers' records are not held up.
func (w *OutcomeWriter) Cycle(ctx context.Context) error {
	outs, err := runstate.Outcomes(ctx, w.rdb)
	if err != nil || len(outs) == 0 {
		return err
	}
	var errs []error
	failed := map[string]bool{}
	for _, o := range outs {
		tracker := o.Ref.Platform + "/" + o.Ref.Project
		if failed[tracker] {
			continue
		}
		holder, _, err := runstate.Holder(ctx, w.rdb, o.Ref)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		departed := ""
		if holder != "" {
			if holder != o.Token {
				continue // another writer holds it
			}
			alive, err := w.rdb.Exists(ctx, keys.Instance(o.Instance)).Result()
			if err != nil {
				errs = append(errs, fmt.Errorf("read liveness of %s: %w", o.Instance, err))
				continue
			}
			if alive == 1 {
				continue // the run is still writing it
			}
			departed = o.Token
		}
		if _, err := w.finisher.Finish(ctx, o, departed); err != nil {
			errs = append(errs, err)
			failed[tracker] = true
		}
	}
	return errors.Join(errs...)
}
