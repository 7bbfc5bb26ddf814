package claim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/pkg/trust"
	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// ErrRedisUnavailable marks a claim that failed because Redis did not
// answer; a receiver answers 503 so the platform redelivers later.
var ErrRedisUnavailable = errors.New("redis unavailable")

// Result reports a claim. Holder names who holds the claim lock when
// the outcome is AlreadyClaimed; Reason says why a ticket is NotEligible.
type Result struct {
	Outcome lifecycle.Outcome          `json:"outcome"`
	Ticket  string                     `json:"ticket"`
	State   string                     `json:"state,omitempty"`
	Reason  string                     `json:"reason,omitempty"`
	Holder  *lifecycle.Holder          `json:"holder,omitempty"`
	Request *lifecycle.PipelineRequest `json:"request,omitempty"`
}

// errClaimLockLapsed fences off a claim's write once its claim lock is no
// longer trusted: it may have expired and been taken since.
var errClaimLockLapsed = errors.New("claim lock no longer trusted (held too long): claim abandoned, the next delivery or sweep makes it")

// Config configures a Service.
type Config struct {
	Instance string
	LockTTL  time.Duration // default keys.ClaimLockTTL
	Labels   lifecycle.Labels
	Clock    func() time.Time
	Logger   *zap.Logger
	// Observer receives every claim outcome and transition (metrics, audit).
	Observer lifecycle.Observer
}

// Service moves Pending tickets to Enqueued and pushes exactly one
// PipelineRequest per claim. It is the only writer of Pending → Enqueued.
type Service struct {
	cfg      Config
	rdb      redis.UniversalClient
	queue    *queue.Queue
	projects lifecycle.ProjectSource
	refusals *lifecycle.Refusals
	log      *zap.Logger
	parked   ParkedCanceller // SetParkedCanceller; nil: none
}

// NewService wires a claim service. It claims tickets of the watched
// projects only (ProjectSource.Watched): a project discovery retired
// starts no new run.
func NewService(rdb redis.UniversalClient, q *queue.Queue, projects lifecycle.ProjectSource, cfg Config) *Service {
	if cfg.LockTTL <= 0 {
		cfg.LockTTL = keys.ClaimLockTTL
	}
	if cfg.Labels.Prefix == "" {
		cfg.Labels.Prefix = lifecycle.DefaultLabelPrefix
	}
	if cfg.Clock == nil {
		cfg.Clock = wallclock.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	refusals := lifecycle.NewRefusals(rdb, lifecycle.RefusalsConfig{Instance: cfg.Instance, Labels: cfg.Labels, Clock: cfg.Clock, Logger: cfg.Logger, Observer: cfg.Observer})
	return &Service{cfg: cfg, rdb: rdb, queue: q, projects: projects, refusals: refusals, log: cfg.Logger}
}

// Refusals is the refusal rule the claims follow, for the other writers of
// the same tickets (housekeeping's repairs).
func (c *Service) Refusals() *lifecycle.Refusals { return c.refusals }

// ClaimSnapshot is ClaimBy for a ticket the caller has a snapshot of (a
// webhook payload, a listing): a ticket whose write the tracker refused
// for good is not claimed again, nor read, while it is unchanged and its
// backoff lasts (BackingOff, no tracker call). changedAt is when the
// tracker says the ticket changed, zero when unknown.
func (c *Service) ClaimSnapshot(ctx context.Context, t *platforms.Ticket, source string, attempt int, actor string, changedAt time.Time) (Result, error) {
	return c.claimBy(ctx, t.Ref, source, attempt, actor, &snapshot{t: t, changedAt: changedAt})
}

// snapshot is the ticket as ClaimSnapshot's caller saw it.
type snapshot struct {
	t         *platforms.Ticket
	changedAt time.Time
}

// PreCheck reports why a ticket snapshot cannot be claimed ("" if it can).
// Receivers run it on the webhook payload to skip tickets without spending
// a tracker API call; the claim runs it again on a fresh read.
func (c *Service) PreCheck(p *lifecycle.Project, t *platforms.Ticket) string {
	switch {
	case !t.Open:
		return "closed"
	case !t.HasLabel(p.TriggerLabel):
		return "no trigger label " + strconv.Quote(p.TriggerLabel)
	}
	if s := c.cfg.Labels.StateOf(t.Labels); s != lifecycle.Pending {
		return lifecycle.StateReasonPrefix + s.String()
	}
	return ""
}

// Claim runs the claim protocol: claim lock (SET NX) → read the ticket with
// its version → pre-checks → conditional Pending → Enqueued → push → CAS
// release. A platform conflict is PreconditionFailed, never an error and
// never a second enqueue.
func (c *Service) Claim(ctx context.Context, ref platforms.Ref, source string, attempt int) (Result, error) {
	return c.ClaimBy(ctx, ref, source, attempt, "")
}

// ClaimBy is Claim for a trigger whose actor is known (a webhook that added
// the trigger label names who did): the run starts only if the project's
// TriggerAllow admits actor. An empty actor is Claim.
func (c *Service) ClaimBy(ctx context.Context, ref platforms.Ref, source string, attempt int, actor string) (Result, error) {
	return c.claimBy(ctx, ref, source, attempt, actor, nil)
}

// claimBy is ClaimBy, and ClaimSnapshot given snap.
func (c *Service) claimBy(ctx context.Context, ref platforms.Ref, source string, attempt int, actor string, snap *snapshot) (Result, error) {
	res := Result{Ticket: ref.String()}
	p, ok := c.projects.Watched().Lookup(ref)
	if !ok {
		return res, fmt.Errorf("claim %s: unknown project %q", ref, ref.Project)
	}
	// One round trip takes the claim lock and reads the ticket's history
	// (or names the holder); the push goes with the lock's release in a
	// second one (claimLocked), so a claim costs Redis 2 round trips. A
	// snapshot's refusal record is read in the first: the lock is not
	// taken while one exists, and only then a third round trip takes it.
	// A gated project's trigger is checked on what the first read with
	// the lock (gateReads): the cached answers about the webhook's actor,
	// or the remembered actor, whose answers take a round trip of their
	// own as their keys are named after who the actor is.
	now := c.cfg.Clock()
	lock := &heldLock{key: keys.ClaimLock(ref.Platform, ref.ID), token: lifecycle.OwnerToken(c.cfg.Instance, source, now), asked: now}
	unless := ""
	if snap != nil {
		unless = lifecycle.RefusalKey(ref)
	}
	reads := gateReads(p, ref, actor)
	l, err := runstate.LockWithHistory(ctx, c.rdb, lock.key, lock.token, c.cfg.LockTTL, ref, unless, reads...)
	if err == nil && l.Stopped {
		if until, ok := c.refusals.BackingOffOn(l.Record, snap.t, snap.changedAt); ok {
			res.Outcome = lifecycle.BackingOff
			res.Reason = "the tracker refused this ticket's write for good; not tried again before " + until.UTC().Format(time.RFC3339) + " unless the ticket changes"
			c.logOutcome(ref, source, attempt, res)
			return res, nil
		}
		l, err = runstate.LockWithHistory(ctx, c.rdb, lock.key, lock.token, c.cfg.LockTTL, ref, "", reads...)
	}
	if err != nil {
		return res, fmt.Errorf("claim lock %s: %w: %w", ref, ErrRedisUnavailable, err)
	}
	if l.Got {
		lock.history = l
		defer c.releaseUnlessSent(ctx, ref, lock)
		return c.claimLocked(ctx, ref, source, attempt, nil, actor, lock)
	}
	{
		if actor != "" && p.TriggerAllow.Gated() {
			// The holder (a sweep, say) may not know who triggered: the
			// next claim that does not know either gates on this person.
			c.rememberTriggerActor(ctx, ref, actor)
		}
		res.Outcome = lifecycle.AlreadyClaimed
		if l.Holder != "" {
			res.Holder = lifecycle.ParseOwnerToken(l.Holder)
		}
		c.logOutcome(ref, source, attempt, res)
	}
	return res, nil
}

// heldLock is a claim lock ClaimBy took with the ticket's history;
// claimLocked sends its release with the push (sent) where it can.
type heldLock struct {
	key, token string
	asked      time.Time // when the SET NX was sent: the lock's trust window starts here
	history    runstate.Locked
	sent       bool
}

// releaseUnlessSent releases lock unless claimLocked already sent the
// release with its push.
func (c *Service) releaseUnlessSent(ctx context.Context, ref platforms.Ref, lock *heldLock) {
	if lock.sent {
		return
	}
	// The release must happen even if the caller's context is done.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := redislock.Release(rctx, c.rdb, lock.key, lock.token); err != nil {
		c.log.Warn("release claim lock", zap.String("ticketId", ref.ID), zap.Error(err))
	}
}

// WithLock runs fn while holding the ticket's claim lock, so repairs
// (revert, re-push) never race a claim of the same ticket. It reports
// false, without calling fn, when someone else holds the lock.
func (c *Service) WithLock(ctx context.Context, ref platforms.Ref, source string, fn func(ctx context.Context) error) (bool, error) {
	lockKey := keys.ClaimLock(ref.Platform, ref.ID)
	token := lifecycle.OwnerToken(c.cfg.Instance, source, c.cfg.Clock())
	got, err := redislock.Acquire(ctx, c.rdb, lockKey, token, c.cfg.LockTTL)
	if err != nil {
		return false, fmt.Errorf("claim lock %s: %w: %w", ref, ErrRedisUnavailable, err)
	}
	if !got {
		return false, nil
	}
	defer func() {
		// The release must happen even if the caller's context is done.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := redislock.Release(rctx, c.rdb, lockKey, token); err != nil {
			c.log.Warn("release claim lock", zap.String("ticketId", ref.ID), zap.Error(err))
		}
	}()
	return true, fn(ctx)
}

// Labels returns the lifecycle label mapping in use.
func (c *Service) Labels() lifecycle.Labels { return c.cfg.Labels }

// Projects returns the watched projects: a snapshot, so a caller that
// reads several of them in one pass sees one consistent set while
// discovery replaces it.
func (c *Service) Projects() lifecycle.Projects { return c.projects.Watched() }

// Config returns the service's configuration with its defaults filled
// in: what else reports as the claim service does (the outcome finisher)
// takes its instance, labels, clock and observer from it.
func (c *Service) Config() Config { return c.cfg }

// ProjectSource returns the source LookupAny reads, retired projects
// included: for a role that finishes runs already started.
func (c *Service) ProjectSource() lifecycle.ProjectSource { return c.projects }

// LookupAny resolves a ref's project whether it is watched or was retired
// by discovery after its ticket was claimed: for what finishes a run
// already started (a requeue, a cancel), never for starting one.
func (c *Service) LookupAny(ref platforms.Ref) (*lifecycle.Project, bool) {
	return c.projects.Lookup(ref)
}

// ClaimLocked does the claim's work for a caller that holds the claim lock
// (Claim, or a repair inside WithLock). t, when given, is a snapshot read
// under that lock.
func (c *Service) ClaimLocked(ctx context.Context, ref platforms.Ref, source string, attempt int, t *platforms.Ticket) (Result, error) {
	return c.claimLocked(ctx, ref, source, attempt, t, "", nil)
}

// claimLocked is ClaimLocked for a trigger by actor ("" when unknown).
// lock, when given, is the claim lock ClaimBy took with the ticket's
// history: the history is not read again, and the cancel request's
// clearing, the push and the lock's release go in one pipeline.
func (c *Service) claimLocked(ctx context.Context, ref platforms.Ref, source string, attempt int, t *platforms.Ticket, actor string, lock *heldLock) (Result, error) {
	res := Result{Ticket: ref.String()}
	p, ok := c.projects.Watched().Lookup(ref)
	if !ok {
		return res, fmt.Errorf("claim %s: unknown project %q", ref, ref.Project)
	}
	if lock != nil {
		// The claim lock is the claim's only title to the ticket: past its
		// trust window it may have expired and been taken by another
		// replica (this one cut from Redis, frozen, or held up by a slow
		// tracker), so no write of this claim goes out after it.
		until := trust.Fraction(c.cfg.LockTTL, trust.DefaultClaimLockTrust).Until(lock.asked)
		ctx = trackerhttp.WithFence(ctx, func(context.Context) error {
			if !c.cfg.Clock().Before(until) {
				return errClaimLockLapsed
			}
			return nil
		})
	}
	var err error
	if t == nil {
		if t, err = p.Tracker.Get(ctx, ref); err != nil {
			if errors.Is(err, platforms.ErrNotFound) {
				res.Outcome, res.Reason = lifecycle.NotEligible, "not found"
				c.logOutcome(ref, source, attempt, res)
				return res, nil
			}
			return res, fmt.Errorf("claim %s: read ticket: %w", ref, err)
		}
	}
	res.State = c.cfg.Labels.StateOf(t.Labels).String()
	if reason := c.PreCheck(p, t); reason != "" {
		if p.RequireNoOpenBlockers {
			c.forgetBlocked(ctx, ref) // it no longer waits for a claim
		}
		res.Outcome, res.Reason = lifecycle.NotEligible, reason
		c.logOutcome(ref, source, attempt, res)
		return res, nil
	}
	// The gates that ask the tracker, in order of cost: is the ticket the
	// project's (a JQL scope), may its trigger start runs, is it ready.
	var runTrigger string // who triggered, when the project gates it
	// The gate's reads made with the lock, and its writes (the actor
	// learned, the answers looked up): sent with the push, or on the way
	// out of a claim that does not push.
	g := &gateState{}
	if lock != nil {
		g.read = lock.history.Read
	}
	defer c.flush(ctx, ref, g)
	for _, gate := range []func() (string, error){
		func() (string, error) { return c.inScope(ctx, p, ref) },
		func() (reason string, err error) {
			reason, runTrigger, err = c.gateTrigger(ctx, p, t, actor, g)
			return reason, err
		},
		func() (string, error) { return c.checkBlockers(ctx, p, ref) },
	} {
		reason, err := gate()
		if err != nil {
			return res, err
		}
		if reason != "" {
			res.Outcome, res.Reason = lifecycle.NotEligible, reason
			c.logOutcome(ref, source, attempt, res)
			return res, nil
		}
	}
	// A ticket reverted after a dead run carries its attempt count in Redis:
	// a claim from any source continues from it, so a late webhook cannot
	// reset the count and run the ticket more than max_attempts times.
	var last int
	var finished bool
	if lock != nil {
		// Read under the same lock, with it: nothing that changes the
		// history of a Pending ticket runs without the claim lock.
		last, finished = lock.history.Last, lock.history.Finished
	} else if last, finished, err = runstate.History(ctx, c.rdb, ref, source != lifecycle.SourceReclaim); err != nil {
		return res, fmt.Errorf("claim %s: %w: %w", ref, ErrRedisUnavailable, err)
	}
	ran := lifecycle.AttemptsRan(last, attempt)
	if p.Pipeline.Attempts().UsedUp(ran) {
		return c.failExhausted(ctx, p, t, ran, source)
	}
	attempt = lifecycle.NextAttempt(ran)
	// A ticket reverted mid-stage continues at the stage its label shows.
	stage := p.StageShown(c.cfg.Labels, t.Labels, true)
	written, err := lifecycle.Relabel(ctx, p.Tracker, p.Labels(c.cfg.Labels), t, lifecycle.Move{From: lifecycle.Pending, To: lifecycle.Enqueued, Stage: stage}, lifecycle.OwnerClaimService)
	if err != nil {
		if errors.Is(err, platforms.ErrPreconditionFailed) {
			res.Outcome = lifecycle.PreconditionFailed
			c.logOutcome(ref, source, attempt, res)
			return res, nil
		}
		if _, refused := c.refusals.Refused(ctx, p, t, lifecycle.RefusalOpClaim, lifecycle.OwnerClaimService, source, err); refused {
			// Asking again gets the same answer: the webhook is answered
			// 2xx, and nobody claims the ticket again until it changes.
			res.Outcome, res.Reason = lifecycle.Refused, lifecycle.OneLine(err.Error(), 300)
			c.logOutcome(ref, source, attempt, res)
			return res, nil
		}
		return res, fmt.Errorf("claim %s: transition pending → enqueued: %w", ref, err)
	}
	now := c.cfg.Clock().UTC()
	req := lifecycle.PipelineRequest{ID: redislock.NewToken(), Ref: ref, Source: source, Attempt: attempt, EnqueuedAt: now, ClaimedAt: now,
		Priority: p.Priority.Of(t.Labels), Stage: stage, Pool: p.PoolFor(stage), Observed: lifecycle.ObservedOf(written)}
	if err := c.push(ctx, p, ref, source, req, runTrigger, g, lock); err != nil {
		// The ticket is Enqueued without a queue entry: EnqueuedReconciler
		// re-pushes it once Redis answers again.
		return res, fmt.Errorf("claim %s: push request (EnqueuedReconciler will re-push): %w: %w", ref, ErrRedisUnavailable, err)
	}
	res.Outcome, res.State, res.Request = lifecycle.Claimed, lifecycle.Enqueued.String(), &req
	c.Emit(lifecycle.Event{Kind: lifecycle.EventTransition, Ref: ref, From: lifecycle.Pending, To: lifecycle.Enqueued, Outcome: string(lifecycle.Claimed),
		Attempt: req.Attempt, Owner: lifecycle.OwnerClaimService, Source: source, RequestID: req.ID,
		// A fresh attempt chain for a ticket that finished before: a human
		// triggered it again (the flow metrics' re-trigger rate).
		Retrigger: finished && last == 0})
	c.react(ctx, p, ref)
	return res, nil
}

// OutOfScopeReason is why a ticket its project's query does not select
// (a Jira JQL scope) is not claimed.
const OutOfScopeReason = "outside the project's scope"

// inScope asks a scoped project's tracker whether ref is one of its
// tickets (platforms.Scoped): a webhook routed by its secret, or a search
// hit read from a lagging index, does not say so. Any other project's
// tickets are its own by their locator.
func (c *Service) inScope(ctx context.Context, p *lifecycle.Project, ref platforms.Ref) (string, error) {
	sc, ok := p.Tracker.(platforms.Scoped)
	if !ok {
		return "", nil
	}
	in, err := sc.InScope(ctx, ref)
	switch {
	case err != nil:
		return "", fmt.Errorf("claim %s: %w", ref, err)
	case !in:
		return OutOfScopeReason, nil
	}
	return "", nil
}

// push queues req. With lock (ClaimBy's), the stale cancel request and
// the send-back counts are cleared (a fresh trigger must not be cancelled
// by it, nor fail for an earlier trigger's send-backs; a reclaim keeps
// both). A gated project's run trigger is recorded and its trigger actor
// dropped (triggerUsedOn) after the push and g's held writes, before the
// lock's release. All
// of it goes in one round trip: after the push the claim has nothing left
// to guard.
func (c *Service) push(ctx context.Context, p *lifecycle.Project, ref platforms.Ref, source string, req lifecycle.PipelineRequest, runTrigger string, g *gateState, lock *heldLock) error {
	var pushed redis.Cmder
	_, err := c.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		if lock != nil && source != lifecycle.SourceReclaim {
			_ = runstate.ClearCancel(ctx, pipe, ref, "")
			// A fresh trigger starts with none of an earlier one's run state.
			_ = runstate.ForgetTrigger(ctx, pipe, ref, true)
		}
		if req.Observed != nil {
			// Before the push: its first take finds the mark.
			runstate.MarkClaimFresh(ctx, pipe, ref, req.ID)
		}
		pushed = c.queue.PushOn(ctx, pipe, req.Encode())
		// The write went through: a refusal recorded before is over.
		lifecycle.ForgetRefusalOn(ctx, pipe, ref)
		g.setOn(ctx, pipe)
		if p.TriggerAllow.Gated() {
			triggerUsedOn(ctx, pipe, ref, runTrigger)
		}
		if lock != nil {
			redislock.ReleaseOn(ctx, pipe, lock.key, lock.token)
			lock.sent = true
		}
		return nil
	})
	if err != nil && pushed != nil && pushed.Err() == nil {
		// The push went; a failed clear or release is the lock's TTL's to end.
		c.log.Warn("claim: a write pipelined with the push (cancel clear, trigger record, lock release)", zap.String("ticketId", ref.ID), zap.Error(err))
		err = nil
	}
	if err != nil {
		if lock != nil {
			lock.sent = false // let the deferred release try again
		}
		return fmt.Errorf("queue push: %w", err)
	}
	g.later = nil // sent with the push
	return nil
}

// reactTimeout bounds the best-effort reaction so a slow tracker delays a
// claim's answer by little.
const reactTimeout = 5 * time.Second

// react marks a claimed ticket with platforms.ReactionEyes where the
// project asks for it. Best effort, after the request is queued: a failure
// is logged and never fails the claim (the label already says Enqueued).
func (c *Service) react(ctx context.Context, p *lifecycle.Project, ref platforms.Ref) {
	r, ok := p.Tracker.(platforms.Reactor)
	if !p.React || !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, reactTimeout)
	defer cancel()
	if err := r.React(ctx, ref, platforms.ReactionEyes); err != nil {
		c.log.Warn("reaction on claimed ticket failed (the claim stands)", zap.String("ticket", ref.String()), zap.Error(err))
	}
}

// Emit reports ev through the claim service's logger and observer, stamped
// with this instance. Housekeeping reports its repairs here too, so one
// observer sees every change a replica makes.
func (c *Service) Emit(ev lifecycle.Event) {
	if ev.At.IsZero() {
		ev.At = c.cfg.Clock().UTC()
	}
	if ev.Instance == "" {
		ev.Instance = c.cfg.Instance
	}
	lifecycle.Emit(c.log, c.cfg.Observer, ev)
}

func (c *Service) logOutcome(ref platforms.Ref, source string, attempt int, res Result) {
	from, _ := lifecycle.ParseState(res.State)
	c.Emit(lifecycle.Event{Kind: lifecycle.EventClaim, Ref: ref, From: from, To: lifecycle.Enqueued, Outcome: string(res.Outcome), Attempt: attempt,
		Owner: lifecycle.OwnerClaimService, Source: source, Reason: res.Reason, Holder: res.Holder})
}

// failExhausted fails a Pending ticket whose attempts are used up instead of
// claiming it again (FailExhausted); the result says why nothing ran.
func (c *Service) failExhausted(ctx context.Context, p *lifecycle.Project, t *platforms.Ticket, used int, source string) (Result, error) {
	res := Result{Ticket: t.Ref.String(), Outcome: lifecycle.NotEligible,
		Reason: fmt.Sprintf("attempts exhausted (%d of %d)", used, p.Pipeline.Attempts().Limit())}
	failed, err := c.FailExhausted(ctx, p, t.Ref, GiveUp{Owner: lifecycle.OwnerClaimService, Source: source, Used: used})
	if err != nil {
		return res, err
	}
	if failed {
		res.State = lifecycle.Failed.String()
	}
	return res, nil
}
