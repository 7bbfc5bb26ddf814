// Package consumer is the consumer role (config.RoleConsumer): it takes
// pipeline requests from the queue, owns a ticket's Enqueued → InProgress
// → Done/Failed through the transition table lifecycle keeps, and runs one
// attempt: the pipeline under its heartbeat, its output, its work branch and
// the outcome comment. One run's path reads in executor.go (the take loop
// and handle), attempt.go (one attempt), output.go (its logs, progress and
// redaction), finish.go (done, failure, result and outcome comment) and
// cancel.go; finisher.go writes an outcome a run recorded but did not write.
package consumer

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runbox"
	"github.com/agentsmithd/agentsmithd/lifecycle/runguard"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/runcg"
	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Executor defaults.
const (
	DefaultConcurrency   = 4
	DefaultShutdownGrace = 10 * time.Second
	DefaultKillGrace     = procrun.DefaultGrace     // SIGTERM → SIGKILL
	DefaultTailBytes     = procrun.DefaultTailBytes // output kept for the failure comment
	DefaultTakeWait      = time.Second
	writeTimeout         = 30 * time.Second
)

var (
	errLostRun      = errors.New("run ownership lost")
	errStateChanged = errors.New("ticket state changed")
	// errFenceUnread: the run lock could not be read (Redis unreachable).
	errFenceUnread = errors.New("fence")
)

// Liveness is the replica's presence (pkg/presence): runs stop the moment
// the replica can no longer prove to others that it is alive.
type Liveness interface {
	Valid() bool
	Lost() <-chan struct{}
}

// ExecutorConfig configures an Executor.
type ExecutorConfig struct {
	Instance       string
	Concurrency    int
	HeartbeatTTL   time.Duration
	HeartbeatRenew time.Duration
	ShutdownGrace  time.Duration // running pipelines may finish within this after shutdown starts
	KillGrace      time.Duration // SIGTERM → SIGKILL
	WorkDir        string
	TailBytes      int
	// LogsDir holds attempt logs ("": DefaultLogsDir(WorkDir), next to the
	// work root, never in it) and LogMaxBytes caps each (default
	// DefaultLogMaxBytes).
	LogsDir     string
	LogMaxBytes int64
	TakeWait    time.Duration
	// WriteTimeout bounds a run's final write (comment and transition);
	// one the tracker has not taken by then is handed over with its
	// recorded outcome to OutcomeFinisher. Default 30 s.
	WriteTimeout time.Duration
	// CancelCheck is how often a running pipeline's cancel request is read
	// (default DefaultCancelCheck).
	CancelCheck time.Duration
	Labels      lifecycle.Labels
	Liveness    Liveness // nil: always live (tests of the executor alone)
	Clock       func() time.Time
	Logger      *zap.Logger
	// Observer receives every transition the executor makes.
	Observer lifecycle.Observer
	// LimitDelay: see DefaultLimitDelay.
	LimitDelay time.Duration
	// PauseDelay: see DefaultPauseDelay.
	PauseDelay time.Duration
	// Rand returns a uniform number in [0, 1) for the retry backoff's
	// jitter; default math/rand/v2.Float64.
	Rand func() float64
	// ProgressInterval is the least time between two writes of a progress
	// comment (default DefaultProgressInterval).
	ProgressInterval time.Duration
	// RestartGrace: no run starts until Redis has been up this long, since
	// a restart may have lost the heartbeat of a run that goes on until it
	// next looks (RestartGrace). 0 starts at once: tests of the executor
	// alone, on a Redis they just started.
	RestartGrace time.Duration
	// Guard, when set, runs every pipeline under a run guard
	// (lifecycle/runguard) that kills it once the run is no longer its
	// own, even while this daemon is frozen. nil runs pipelines directly
	// (tests that run the daemon inside the test binary).
	Guard *runguard.Launcher
	// RefusedStartDelay is how long a ticket whose run guard did not start
	// its pipeline waits before the same attempt is taken again (default
	// DefaultRefusedStartDelay).
	RefusedStartDelay time.Duration
	// Cgroups, when set, runs every pipeline and persist command in a
	// cgroup of its own, killed when the run ends (pkg/runcg): nothing the
	// pipeline started survives it, even outside its process group. nil
	// leaves that to the process group and the run guard's subreaper.
	Cgroups *runcg.Parent
	// Sandbox, when set, runs every pipeline and persist command in a
	// sandbox of its own (lifecycle/runbox). nil runs them on the host.
	Sandbox *runbox.Config
	// SandboxOff says the config turned the sandbox off: each run says
	// so in the log.
	SandboxOff bool

	// HeartbeatLostSignal is a test signal, nil in production: called with
	// the heartbeat's trust deadline and the cause when a run gives its
	// heartbeat up, before the pipeline is killed.
	HeartbeatLostSignal func(trustedUntil time.Time, cause error)
}

// Executor is the PipelineQueueConsumer and PipelineExecutor of the
// specification: it takes requests, owns Enqueued → InProgress → Done/Failed,
// and keeps the heartbeat alive while the pipeline runs.
type Executor struct {
	cfg        ExecutorConfig
	rdb        redis.UniversalClient
	queue      *queue.Queue
	projects   lifecycle.ProjectSource
	log        *zap.Logger
	refusals   *lifecycle.Refusals
	processing string
}

// NewExecutor wires an executor.
func NewExecutor(rdb redis.UniversalClient, q *queue.Queue, projects lifecycle.ProjectSource, cfg ExecutorConfig) *Executor {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.HeartbeatTTL <= 0 {
		cfg.HeartbeatTTL = keys.HeartbeatTTL
	}
	if cfg.HeartbeatRenew <= 0 {
		cfg.HeartbeatRenew = keys.HeartbeatRenew
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = DefaultKillGrace
	}
	if cfg.WorkDir == "" {
		cfg.WorkDir = lifecycle.DefaultWorkRoot()
	}
	if cfg.TailBytes <= 0 {
		cfg.TailBytes = DefaultTailBytes
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = writeTimeout
	}
	if cfg.TakeWait <= 0 {
		cfg.TakeWait = DefaultTakeWait
	}
	if cfg.ProgressInterval <= 0 {
		cfg.ProgressInterval = DefaultProgressInterval
	}
	if cfg.CancelCheck <= 0 {
		cfg.CancelCheck = DefaultCancelCheck
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
	if cfg.LimitDelay <= 0 {
		cfg.LimitDelay = DefaultLimitDelay
	}
	if cfg.PauseDelay <= 0 {
		cfg.PauseDelay = DefaultPauseDelay
	}
	if cfg.RefusedStartDelay <= 0 {
		cfg.RefusedStartDelay = DefaultRefusedStartDelay
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	refusals := lifecycle.NewRefusals(rdb, lifecycle.RefusalsConfig{Instance: cfg.Instance, Labels: cfg.Labels, Clock: cfg.Clock, Logger: cfg.Logger, Observer: cfg.Observer})
	return &Executor{cfg: cfg, rdb: rdb, queue: q, projects: projects, log: cfg.Logger, refusals: refusals,
		processing: keys.Processing(cfg.Instance)}
}

// Run consumes the queue until ctx is done. Shutdown is graceful: no new
// request is taken, running pipelines get ShutdownGrace to finish, then they
// are stopped (SIGTERM, SIGKILL after KillGrace) and their tickets handed
// back to the queue at once instead of waiting for stale detection.
func (e *Executor) Run(ctx context.Context) error {
	// Requests this instance took in an earlier life but never started.
	if n, err := e.queue.Requeue(ctx, e.processing); err != nil {
		e.log.Warn("requeue own processing list", zap.Error(err))
	} else if n > 0 {
		e.log.Info("requeued requests from own processing list", zap.Int("count", n))
	}
	runCtx, cancelRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRuns()
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(e.cfg.ShutdownGrace, cancelRuns)
		context.AfterFunc(runCtx, func() { t.Stop() })
	})
	defer stop()

	var wg sync.WaitGroup
	for range e.cfg.Concurrency {
		wg.Go(func() { e.worker(ctx, runCtx) })
	}
	wg.Wait()
	// Anything taken while shutting down goes back for another replica.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := e.queue.Requeue(rctx, e.processing); err != nil {
		e.log.Warn("requeue own processing list on shutdown", zap.Error(err))
	}
	return nil
}

func (e *Executor) worker(ctx, runCtx context.Context) {
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		if e.cfg.Liveness != nil && !e.cfg.Liveness.Valid() {
			// Not provably alive: taking work now could start a run that
			// housekeeping already considers dead.
			if !sleepCtx(ctx, 100*time.Millisecond) {
				return
			}
			continue
		}
		payload, err := e.queue.Take(ctx, e.processing, e.cfg.TakeWait)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
			e.log.Warn("take request", zap.Error(err), zap.Duration("retryIn", backoff))
			if !sleepCtx(ctx, backoff) {
				return
			}
			continue
		}
		backoff = 0
		if payload == nil {
			continue
		}
		if retry := e.handle(runCtx, payload); retry {
			backoff = time.Second
			sleepCtx(ctx, backoff)
		}
	}
}

// handle processes one taken request. It reports whether the request was
// given back because a dependency failed, so the worker can back off.
func (e *Executor) handle(ctx context.Context, payload []byte) (retry bool) {
	req, err := lifecycle.DecodeRequest(payload)
	if err != nil {
		e.log.Error("dropping undecodable request", zap.Error(err))
		e.ack(ctx, payload)
		return false
	}
	log := e.log.With(zap.String("ticketId", req.Ref.ID), zap.String("platform", req.Ref.Platform),
		zap.String("project", req.Ref.Project), zap.Int("attempt", req.Attempt), zap.String("requestId", req.ID),
		zap.String("source", req.Source), zap.Bool("handedBack", req.Source == lifecycle.SourceHandBack))
	p, ok := e.projects.Lookup(req.Ref)
	if !ok {
		log.Error("dropping request for unknown project")
		e.ack(ctx, payload)
		return false
	}
	if aside, retry := e.pausedAside(ctx, req, payload, log); aside {
		return retry
	}
	if slot, full := e.atLimit(ctx, p); full {
		return e.delay(ctx, payload, e.cfg.LimitDelay, "concurrency limit reached ("+slot+")", log)
	}
	// Where the tracker answers its label write with the whole ticket and
	// fails a write on a ticket that changed since the snapshot, the
	// request's Observed (the claim's write answer) stands in for a read:
	// the move to InProgress below is the first call, and checkStart
	// checks its answer as this read would be checked. Elsewhere (GitHub
	// REST answers a label write with labels only, Jira Data Center's PUT
	// with nothing) the ticket is read, so a ticket closed or untriggered
	// since the claim is seen before anything is written. Only the first take of the
	// claim's own request starts from its answer (freshClaim): a copy
	// taken later may find the ticket moved on, and not every such
	// tracker refuses a write on a changed ticket.
	fromClaim := req.Observed != nil && answersWhole(p.Tracker) && e.freshClaim(ctx, req, log)
	t, err := e.takeSnapshot(ctx, p, req, fromClaim)
	if err != nil {
		if errors.Is(err, platforms.ErrNotFound) {
			log.Warn("dropping request: ticket not found")
			e.ack(ctx, payload)
			return false
		}
		log.Warn("read ticket; giving the request back", zap.Error(err))
		e.giveBack(ctx, payload)
		return true
	}
	// Enqueued, or Enqueued → InProgress half done (both labels: a start
	// whose removal of the Enqueued label failed); the run lock below decides
	// whether a live run owns it.
	if s := e.cfg.Labels.StateOf(t.Labels); s != lifecycle.Enqueued && !(s == lifecycle.InProgress && t.HasLabel(e.cfg.Labels.Label(lifecycle.Enqueued))) {
		log.Info("dropping request: ticket is not enqueued", zap.String("state", s.String()))
		e.ack(ctx, payload)
		return false
	}
	if until, ok := e.refusals.BackingOff(ctx, t, time.Time{}); ok {
		// The tracker refused this ticket's write for good and it has not
		// changed since: asked again at the end of its backoff.
		return e.delay(ctx, payload, until.Sub(e.cfg.Clock()), "the tracker refused this ticket's label write for good", log)
	}
	stage := stageOf(p, p.Labels(e.cfg.Labels), t.Labels, req)
	if stage != "" {
		p = p.ForStage(stage)
		log = log.With(zap.String("stage", stage))
	}
	token := lifecycle.OwnerToken(e.cfg.Instance, req.Source, e.cfg.Clock())
	rec := runstate.Record{Ref: req.Ref, Instance: e.cfg.Instance, Token: token, RequestID: req.ID, Attempt: req.Attempt, Started: e.cfg.Clock().UTC()}
	a := &attempt{e: e, p: p, req: req, token: token, log: log, stage: stage}
	// Until the run is taken, writes are fenced by the run's token alone.
	a.fence = a.newFence(nil)
	takenAt := e.cfg.Clock()
	took, wait, why, err := a.takeRun(ctx, rec)
	if err != nil {
		log.Warn("take run; giving the request back", zap.Error(err))
		e.giveBack(ctx, payload)
		return true
	}
	if wait > 0 {
		return e.delay(ctx, payload, wait, why, log)
	}
	if !took {
		e.dropContended(ctx, req)
		e.ack(ctx, payload)
		return false
	}
	// The heartbeat runs from the take, trusted from before it, until the
	// outcome is written: the move to in-progress may wait out tracker
	// rate limits for most of its TTL, and the pipeline's run guard, which
	// reads the heartbeat's TTL left in Redis, must find it as fresh as
	// the executor trusts it.
	a.hb = a.startHeartbeat(ctx, takenAt)
	defer a.hb.stop()
	a.fence = a.newFence(a.hb)
	if a.cancelQueued(ctx, t) {
		e.ack(ctx, payload)
		return false
	}
	t, err = a.moveAs(ctx, t, lifecycle.Enqueued, lifecycle.InProgress, executorOutcomes[lifecycle.InProgress], startReason(req))
	if err == nil && fromClaim {
		var run bool
		if t, run = a.checkStart(ctx, t); !run {
			e.ack(ctx, payload)
			return false
		}
	}
	if err != nil {
		a.releaseRun(false)
		if errors.Is(err, errStateChanged) || errors.Is(err, errLostRun) {
			log.Info("dropping request", zap.Error(err))
			e.ack(ctx, payload)
			return false
		}
		if errors.Is(err, platforms.ErrRejected) {
			// Refused for good (moveAs told the ticket): not taken again
			// before the ticket's backoff ends.
			return e.delay(ctx, payload, lifecycle.RefusalBackoffInitial, "the tracker refused this ticket's label write for good", log)
		}
		log.Warn("transition to in-progress; giving the request back", zap.Error(err))
		e.giveBack(ctx, payload)
		return true
	}
	e.ack(ctx, payload)
	a.started = e.cfg.Clock()
	a.markUsed()
	defer a.markUsed()
	a.execute(ctx, t)
	return false
}

func (e *Executor) ack(ctx context.Context, payload []byte) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := e.queue.Ack(actx, e.processing, payload); err != nil {
		e.log.Warn("ack request (it stays in the processing list until requeued)", zap.Error(err))
	}
}

// giveBack puts a request at the tail of the queue again and acks it. A
// crash between the two leaves a duplicate, which the consumer drops.
func (e *Executor) giveBack(ctx context.Context, payload []byte) {
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := e.queue.Push(gctx, payload); err != nil {
		e.log.Warn("give request back (it stays in the processing list until requeued)", zap.Error(err))
		return
	}
	e.ack(gctx, payload)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// OutcomeRunHeld is the outcome of a request a consumer dropped because
// another run owns its ticket (a duplicate request).
const OutcomeRunHeld = "run_held"

// dropContended reports a request dropped because another run holds the
// ticket's heartbeat, naming that run's instance, trigger source and start
// (decoded from its token), so the contention can be traced to its holder.
func (e *Executor) dropContended(ctx context.Context, req lifecycle.PipelineRequest) {
	ev := lifecycle.Event{Kind: lifecycle.EventClaim, At: e.cfg.Clock().UTC(), Ref: req.Ref, From: lifecycle.Enqueued, To: lifecycle.InProgress,
		Outcome: OutcomeRunHeld, Attempt: req.Attempt, Owner: lifecycle.OwnerExecutor, Instance: e.cfg.Instance,
		Source: req.Source, RequestID: req.ID, Reason: "another run owns the ticket; request dropped"}
	if token, _, err := runstate.Holder(ctx, e.rdb, req.Ref); err == nil && token != "" {
		ev.Holder = lifecycle.ParseOwnerToken(token)
	}
	lifecycle.Emit(e.log, e.cfg.Observer, ev)
}

// DefaultLimitDelay is how long a request whose project is at its
// concurrency limit waits in the delayed set before it is tried again.
const DefaultLimitDelay = 2 * time.Second

// atLimit reports whether one of p's semaphores is full right now: a read
// made before the tracker is asked for the ticket, so a project at its limit
// costs no API call per give-back. runstate.Take decides for good.
func (e *Executor) atLimit(ctx context.Context, p *lifecycle.Project) (string, bool) {
	key, full, err := runstate.Full(ctx, e.rdb, p.Slots(), e.cfg.Clock())
	if err != nil {
		return "", false // runstate.Take will see the same Redis and decide
	}
	return key, full
}

// takeRun takes the run and a place in each of p's semaphores; wait is how
// long to put the request aside instead: a semaphore of p (or of its
// token) is full, or Redis restarted within the restart grace. A stale
// request (its ticket already ran a later attempt) is reported as not
// taken, like one whose ticket another run owns: both are dropped.
func (a *attempt) takeRun(ctx context.Context, rec runstate.Record) (took bool, wait time.Duration, why string, err error) {
	e, p, log := a.e, a.p, a.log
	res, err := runstate.Take(ctx, e.rdb, rec, runstate.TakeArgs{TTL: e.cfg.HeartbeatTTL, Now: e.cfg.Clock(),
		Slots: p.Slots(), RestartGrace: e.cfg.RestartGrace})
	switch res.Result {
	case runstate.Stale:
		log.Info("request is stale: the ticket already ran a later attempt")
	case runstate.Limited:
		return false, e.cfg.LimitDelay, "concurrency limit reached (" + res.Slot + ")", err
	case runstate.Restarting:
		// A little past the grace, so the next take finds it over.
		return false, res.Wait + 100*time.Millisecond, "Redis started less than the restart grace (" + e.cfg.RestartGrace.String() +
			") ago: runs wait so one live before a Redis restart can notice and stop first; normal on a first start", err
	}
	return res.Result == runstate.Taken && err == nil, 0, "", err
}

// delay puts a request that cannot run yet back through the delayed set
// for wait: it keeps its attempt (nothing ran), and the worker takes other
// work meanwhile instead of spinning on it.
func (e *Executor) delay(ctx context.Context, payload []byte, wait time.Duration, why string, log *zap.Logger) (retry bool) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := e.queue.Delay(dctx, payload, wait); err != nil {
		log.Warn("delay request; giving it back", zap.String("why", why), zap.Error(err))
		e.giveBack(ctx, payload)
		return true
	}
	e.ack(ctx, payload)
	log.Info("request delayed", zap.String("why", why), zap.Duration("delay", wait))
	return false
}

// renewSlots keeps the run's semaphore places alive with its heartbeat.
func (e *Executor) renewSlots(ctx context.Context, p *lifecycle.Project, token string, until time.Time) {
	slots := p.Slots()
	if len(slots) == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.HeartbeatRenew)
	defer cancel()
	if err := runstate.RenewSlots(rctx, e.rdb, slots, token, until); err != nil {
		e.log.Warn("renew concurrency slots (they expire with the heartbeat TTL)", zap.Error(err))
	}
}

// DefaultPauseDelay is how long a paused project's request waits in the
// delayed set before a consumer looks at it again. Long, because Resume
// makes the waiting requests due at once; it only bounds the cost of a
// paused project (one GET, ZADD and LREM per request per delay).
const DefaultPauseDelay = 30 * time.Second

// pausedAside puts the request aside when its project is paused (and
// reports so): before its tracker is read, so a paused project costs no
// API call per look. A request whose ticket has a cancel request goes on,
// so a cancel from the operator is honoured while the project is paused
// (the executor fails the ticket before any run starts).
func (e *Executor) pausedAside(ctx context.Context, req lifecycle.PipelineRequest, payload []byte, log *zap.Logger) (aside, retry bool) {
	paused, err := lifecycle.ProjectPaused(ctx, e.rdb, req.Ref.Project)
	if err == nil && paused {
		var cause string
		if cause, err = runstate.RequestedCancel(ctx, e.rdb, req.Ref); err == nil && cause != "" {
			return false, false
		}
	}
	switch {
	case err != nil:
		log.Warn("read the project's pause; giving the request back", zap.Error(err))
		e.giveBack(ctx, payload)
		return true, true
	case paused:
		return true, e.putAsidePaused(ctx, req, payload, log)
	}
	return false, false
}

// putAsidePaused moves a taken request of a paused project into the delayed
// set (marked PausedAside, its attempt unchanged: nothing ran), so the
// worker takes other projects' work instead of spinning on it. It reads
// the pause again after the delay: a resume that ran in between found the
// request in this consumer's processing list, not in the delayed set, so
// the request makes itself due instead.
func (e *Executor) putAsidePaused(ctx context.Context, req lifecycle.PipelineRequest, payload []byte, log *zap.Logger) (retry bool) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	req.PausedAside = true
	aside := req.Encode()
	if err := e.queue.Delay(dctx, aside, e.cfg.PauseDelay); err != nil {
		log.Warn("put aside a paused project's request; giving it back", zap.Error(err))
		e.giveBack(ctx, payload)
		return true
	}
	e.ack(ctx, payload)
	if paused, err := lifecycle.ProjectPaused(dctx, e.rdb, req.Ref.Project); err == nil && !paused {
		if _, err := lifecycle.MakePausedDue(dctx, e.rdb, e.queue.DelayedKey(), req.Ref.Project); err != nil {
			log.Warn("project resumed while its request was put aside; it runs after the pause delay", zap.Error(err))
		}
		return false
	}
	log.Debug("project paused; request put aside", zap.Duration("delay", e.cfg.PauseDelay))
	return false
}

// ResumedReason is the reason of the Enqueued → InProgress transition of a
// run a shutdown handed back (lifecycle.SourceHandBack): the same attempt
// resumes, which logs and the audit stream show apart from a fresh one.
const ResumedReason = "resumes a run handed back at shutdown"

// startReason is the reason the Enqueued → InProgress transition of req
// reports: ResumedReason for a hand-back, "" for a fresh attempt.
func startReason(req lifecycle.PipelineRequest) string {
	if req.Source == lifecycle.SourceHandBack {
		return ResumedReason
	}
	return ""
}
