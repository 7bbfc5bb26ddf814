package housekeeping

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// StuckDetectorConfig configures a StuckDetector.
type StuckDetectorConfig struct {
	Interval time.Duration // default DefaultSlowInterval
	// FlagTTL is how long a flag is remembered (default keys.StuckFlagTTL).
	FlagTTL time.Duration
	// Fence is checked before every comment; see StaleJobDetectorConfig.Fence.
	Fence  func(context.Context) error
	Clock  func() time.Time
	Logger *zap.Logger
}

// StuckDetector flags tickets that stay Enqueued or InProgress longer than
// their project's threshold: a log line and an Event of kind
// lifecycle.EventStuck (metrics count it), and optionally one comment. It
// changes no state: a stuck run may be a slow one. Time in state comes from
// Redis alone, no tracker call: InProgress from the in-flight run record's
// Started, Enqueued from the EnqueuedAt of the ticket's oldest request on a
// queue level, in the delayed set or in a processing list (a retry's
// EnqueuedAt is its due time, so its backoff does not count). Each run or request is flagged once
// (keys.StuckFlag remembers which), so a ticket triggered again later is
// flagged again if it sticks again.
type StuckDetector struct {
	cfg    StuckDetectorConfig
	rdb    redis.UniversalClient
	queue  *queue.Queue
	claims *claim.Service
	log    *zap.Logger
}

// NewStuckDetector wires a detector.
func NewStuckDetector(rdb redis.UniversalClient, q *queue.Queue, claims *claim.Service, cfg StuckDetectorConfig) *StuckDetector {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultSlowInterval
	}
	if cfg.FlagTTL <= 0 {
		cfg.FlagTTL = keys.StuckFlagTTL
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
	return &StuckDetector{cfg: cfg, rdb: rdb, queue: q, claims: claims, log: cfg.Logger.Named("StuckDetector")}
}

// Run checks every Interval until ctx is done.
func (d *StuckDetector) Run(ctx context.Context) error {
	return loop(ctx, d.log, d.cfg.Interval, d.cfg.Interval, nil, nil, d.Check, d.Check)
}

// thresholds are the limits of a ticket's project; a ticket whose project
// is no longer configured gets the defaults, without comments.
func (d *StuckDetector) thresholds(ref platforms.Ref) lifecycle.StuckThresholds {
	if p, ok := d.claims.Projects().Lookup(ref); ok {
		return p.Stuck
	}
	return lifecycle.StuckThresholds{}
}

// stay is one ticket's time in a state. req carries the ticket, attempt and
// request id; id is what a flag remembers (the run's token or the request's
// id).
type stay struct {
	req   lifecycle.PipelineRequest
	state lifecycle.State
	since time.Time
	id    string
}

// Check flags every ticket past its threshold that was not flagged yet.
func (d *StuckDetector) Check(ctx context.Context) error {
	stays, err := d.stays(ctx)
	if err != nil {
		return err
	}
	now := d.cfg.Clock()
	var errs []error
	for _, s := range stays {
		th := d.thresholds(s.req.Ref)
		limit := th.Limit(s.state)
		if in := now.Sub(s.since); in > limit {
			if err := d.flag(ctx, s, in, limit, th.Comment); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// stays reads every in-flight run and every queued request (the oldest per
// ticket) from Redis.
func (d *StuckDetector) stays(ctx context.Context) ([]stay, error) {
	runs, err := runstate.Runs(ctx, d.rdb)
	if err != nil {
		return nil, err
	}
	var out []stay
	running := map[string]bool{}
	for _, rec := range runs {
		if rec.Ref.ID == "" || rec.Started.IsZero() {
			continue
		}
		running[rec.Ref.Key()] = true
		out = append(out, stay{req: lifecycle.PipelineRequest{Ref: rec.Ref, Attempt: rec.Attempt, ID: rec.RequestID},
			state: lifecycle.InProgress, since: rec.Started, id: rec.Token})
	}
	reqs, err := lifecycle.QueuedRequests(ctx, d.queue)
	if err != nil {
		return nil, err
	}
	oldest := map[string]lifecycle.PipelineRequest{}
	for _, req := range reqs {
		if req.EnqueuedAt.IsZero() || running[req.Ref.Key()] {
			continue
		}
		if o, ok := oldest[req.Ref.Key()]; !ok || req.EnqueuedAt.Before(o.EnqueuedAt) {
			oldest[req.Ref.Key()] = req
		}
	}
	for _, req := range oldest {
		out = append(out, stay{req: req, state: lifecycle.Enqueued, since: req.EnqueuedAt, id: req.ID})
	}
	return out, nil
}

// flag reports one stuck ticket unless this run or request was flagged
// before.
func (d *StuckDetector) flag(ctx context.Context, s stay, in, limit time.Duration, comment bool) error {
	ref := s.req.Ref
	key := keys.StuckFlag(ref.Key(), s.state.String())
	prev, err := d.rdb.SetArgs(ctx, key, s.id, redis.SetArgs{TTL: d.cfg.FlagTTL, Get: true}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("stuck flag of %s: %w", ref, err)
	}
	if prev == s.id {
		return nil
	}
	reason := fmt.Sprintf("%s for %s, longer than the project's %s", s.state, in.Round(time.Second), limit)
	d.claims.Emit(lifecycle.Event{Kind: lifecycle.EventStuck, Ref: ref, From: s.state, To: s.state, Outcome: "stuck",
		Attempt: s.req.Attempt, RequestID: s.req.ID, Reason: reason})
	if !comment {
		return nil
	}
	p, ok := d.claims.Projects().Lookup(ref)
	if !ok {
		return nil
	}
	if err := d.cfg.Fence(ctx); err != nil {
		return fmt.Errorf("stuck comment on %s: %w", ref, err)
	}
	body := fmt.Sprintf("**%s**: this ticket has been %s; it may be stuck. agentsmithd changes nothing on its own here.",
		d.claims.Labels().Prefix, reason)
	if err := p.Tracker.Comment(trackerhttp.WithFence(ctx, d.cfg.Fence), ref, body); err != nil {
		// Forget the flag so the next cycle tries the comment again.
		_ = d.rdb.Del(context.WithoutCancel(ctx), key).Err()
		return fmt.Errorf("stuck comment on %s: %w", ref, err)
	}
	return nil
}
