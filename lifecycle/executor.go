package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle/runguard"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/pkg/runcg"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/pkg/trust"
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
	// commentTimeout bounds one comment with its retries and its short
	// replacement, so the transition after it keeps the rest of
	// writeTimeout: a tracker that keeps refusing a comment must not cost
	// the ticket its Failed label (and the run a second attempt).
	commentTimeout = 10 * time.Second
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
	Labels      Labels
	Liveness    Liveness // nil: always live (tests of the executor alone)
	Clock       func() time.Time
	Logger      *zap.Logger
	// Observer receives every transition the executor makes.
	Observer Observer
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
	// Cgroups, when set, runs every pipeline and persist command in a
	// cgroup of its own, killed when the run ends (pkg/runcg): nothing the
	// pipeline started survives it, even outside its process group. nil
	// leaves that to the process group and the run guard's subreaper.
	Cgroups *runcg.Parent
}

// Executor is the PipelineQueueConsumer and PipelineExecutor of the
// specification: it takes requests, owns Enqueued → InProgress → Done/Failed,
// and keeps the heartbeat alive while the pipeline runs.
type Executor struct {
	cfg        ExecutorConfig
	rdb        redis.UniversalClient
	queue      *queue.Queue
	projects   ProjectSource
	log        *zap.Logger
	refusals   *Refusals
	processing string
}

// NewExecutor wires an executor.
func NewExecutor(rdb redis.UniversalClient, q *queue.Queue, projects ProjectSource, cfg ExecutorConfig) *Executor {
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
		cfg.WorkDir = os.TempDir() + "/agentsmithd/work"
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
		cfg.Labels.Prefix = DefaultLabelPrefix
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
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	refusals := NewRefusals(rdb, RefusalsConfig{Instance: cfg.Instance, Labels: cfg.Labels, Clock: cfg.Clock, Logger: cfg.Logger, Observer: cfg.Observer})
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
	req, err := DecodeRequest(payload)
	if err != nil {
		e.log.Error("dropping undecodable request", zap.Error(err))
		e.ack(ctx, payload)
		return false
	}
	log := e.log.With(zap.String("ticketId", req.Ref.ID), zap.String("platform", req.Ref.Platform),
		zap.String("project", req.Ref.Project), zap.Int("attempt", req.Attempt), zap.String("requestId", req.ID))
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
	t, err := p.Tracker.Get(ctx, req.Ref)
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
	if s := e.cfg.Labels.StateOf(t.Labels); s != Enqueued && !(s == InProgress && t.HasLabel(e.cfg.Labels.Label(Enqueued))) {
		log.Info("dropping request: ticket is not enqueued", zap.String("state", s.String()))
		e.ack(ctx, payload)
		return false
	}
	if until, ok := e.refusals.BackingOff(ctx, t, time.Time{}); ok {
		// The tracker refused this ticket's write for good and it has not
		// changed since: asked again at the end of its backoff.
		return e.delay(ctx, payload, until.Sub(e.cfg.Clock()), "the tracker refused this ticket's label write for good", log)
	}
	token := ownerToken(e.cfg.Instance, req.Source, e.cfg.Clock())
	rec := runstate.Record{Ref: req.Ref, Instance: e.cfg.Instance, Token: token, RequestID: req.ID, Attempt: req.Attempt, Started: e.cfg.Clock().UTC()}
	a := &attempt{e: e, p: p, req: req, token: token, log: log}
	// Until the heartbeat runs, writes are fenced by the run's token alone.
	a.fence = a.newFence(nil)
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
	if a.cancelQueued(ctx, t) {
		e.ack(ctx, payload)
		return false
	}
	t, err = a.move(ctx, t, Enqueued, InProgress)
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
			return e.delay(ctx, payload, RefusalBackoffInitial, "the tracker refused this ticket's label write for good", log)
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

// markUsed records now as when the ticket's work dir was last used, which
// retention dates it by (MarkUsed); a failure is logged and costs the run
// nothing (retention then dates the ticket from when it first finds it
// unmarked).
func (a *attempt) markUsed() {
	e := a.e
	if err := MarkUsed(LogsRoot(e.cfg.WorkDir, e.cfg.LogsDir), a.req.Ref, e.cfg.Clock()); err != nil {
		a.log.Warn("record the work dir's last use", zap.Error(err))
	}
}

// execute runs the pipeline and writes the outcome, unless the run lost its
// ownership, in which case it writes nothing at all.
func (a *attempt) execute(ctx context.Context, t *platforms.Ticket) {
	e, p, req, token, log := a.e, a.p, a.req, a.token, a.log
	workDir := WorkDir(e.cfg.WorkDir, req.Ref)
	spec := pipelineSpec(p, t, req.Attempt, workDir)
	resultFile := ResultFile(workDir)
	spec.Env = append(spec.Env, "AGENTSMITH_RUN_TOKEN="+token, ResultFileEnv+"="+resultFile)
	spec.Grace = e.cfg.KillGrace
	spec.TailBytes = e.cfg.TailBytes
	// The heartbeat runs from before the pipeline starts until the outcome
	// is written, so a slow or retried final write never outlives it.
	hb := a.startHeartbeat(ctx)
	a.hb = hb
	defer hb.stop()
	cw := a.watchCancel(ctx)
	defer cw.stop()
	var res procrun.Result
	lostEarly := false
	if err := os.MkdirAll(workDir, 0o750); err != nil {
		res = procrun.Result{ExitCode: -1, Err: fmt.Errorf("create work dir: %w", err)}
	} else if err := removeStale(resultFile); err != nil {
		res = procrun.Result{ExitCode: -1, Err: err}
	} else if err := removeStale(ProgressFile(workDir)); err != nil {
		res = procrun.Result{ExitCode: -1, Err: err}
	} else if err := a.prepareWork(ctx, workDir); err != nil {
		res = procrun.Result{ExitCode: -1, Err: err}
	} else if err := handOver(e.cfg.WorkDir, workDir, p.Pipeline.RunAs); err != nil {
		res = procrun.Result{ExitCode: -1, Err: err}
	} else if err := a.fence(ctx); errors.Is(err, errLostRun) {
		// Looked at once more right before the start: a Redis restart or
		// a freeze since the take may have cost the run its lock, and a
		// run started now would go on beside its successor until the next
		// renewal. A Redis that cannot be read is left to the heartbeat
		// and the run guard, as before; it costs no attempt here.
		res = procrun.Result{ExitCode: -1, Err: fmt.Errorf("before starting the pipeline: %w", err)}
		lostEarly = true
	} else {
		if err != nil {
			log.Warn("could not read the run lock before starting the pipeline; the heartbeat watches it", zap.Error(err))
		}
		ran := make(chan struct{})
		spec.Kill = eitherClosed(hb.kill, cw.kill, ran)
		out := a.openOutput(ctx)
		red := a.redactOutput(out)
		spec.Output = red
		stopProgress := a.startProgress(ctx, hb, workDir, &spec)
		res = e.runPipeline(ctx, spec, req.Ref, token)
		a.noteLeftover(res)
		stopProgress()
		close(ran)
		res.Tail = red.finish()
		if out != nil {
			_ = out.Close()
		}
		a.result, a.resultNotes = ReadResult(resultFile)
		var dropped []string
		a.result, dropped = redactResult(p.Redact, a.result)
		a.resultNotes = append(a.resultNotes, dropped...)
		if res.Err != nil && p.Pipeline.StartHint != "" {
			res.Err = fmt.Errorf("%w (%s)", res.Err, p.Pipeline.StartHint)
		}
	}
	cw.stop()
	if lostEarly {
		log.Warn("run lost its ownership before its pipeline started; nothing run, no label written", zap.Error(res.Err))
		a.releaseRun(false)
		return
	}
	if lost := hb.lostErr(); lost != nil {
		log.Warn("run lost its ownership; pipeline killed, no label written", zap.Error(lost))
		// Drops only this run's in-flight record: both deletes are CAS on
		// the token, so the new owner's heartbeat is left alone.
		a.releaseRun(false)
		return
	}
	// A pipeline killed by a signal the executor did not send, while the
	// run lock is not this run's, was killed by its run guard for that:
	// the run is lost, and what it left is no outcome. Recording it would
	// re-take a lock a Redis restart emptied (recordOutcome) and end the
	// ticket with the guard's kill instead of running it again.
	if res.Signal != "" && !res.Killed && !res.TimedOut && !res.Canceled {
		fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		err := a.newFence(hb)(fctx)
		fcancel()
		switch {
		case errors.Is(err, errLostRun):
			log.Warn("run lost its ownership; its run guard killed the pipeline, no outcome recorded, no label written", zap.Error(err))
			a.releaseRun(false)
			return
		case err != nil:
			a.killUnconfirmed = true
		}
	}
	// The outcome must be written even while shutting down.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.WriteTimeout)
	defer cancel()
	a.fence = a.newFence(hb)
	if cause := cw.causeOf(); cause != "" && !res.OK() {
		a.workNotes = a.saveWork(ctx, workDir, false, "cancelled ("+cause+")", 0)
		a.failCancelled(wctx, InProgress, cause)
		return
	}
	switch {
	case res.Canceled:
		a.workNotes = a.saveWork(ctx, workDir, false, "stopped by shutdown, handed back", handBackSaveTimeout)
		a.handBack(wctx, t)
	case res.OK():
		// Recorded before anything else, and again with the comment once
		// the work branch is saved: a replica that dies or a tracker that
		// does not answer from here on costs the outcome nothing.
		o := a.newOutcome(Done, executorOutcomes[Done], "", "", "", "")
		// The first record carries the comment as far as it is known (the
		// result, not yet the saved branch): a replica killed during a
		// long push still leaves the ticket its comment.
		o.Body, o.Short = a.doneComment(res)
		recorded := a.recordOutcome(o)
		a.workNotes = a.saveWork(ctx, workDir, true, "", 0)
		o.Body, o.Short = a.doneComment(res)
		o.Branch, o.Commit = a.branch, a.pushed
		// Either record lets the outcome be written from it: one Redis
		// error on the first does not skip the second.
		if a.recordOutcome(o) {
			recorded = true
		}
		a.finishRun(wctx, t, o, recorded)
	default:
		a.failed(ctx, t, res)
	}
}

// startProgress keeps the run's progress comment when the project wants
// one (progress: comment) and its tracker can edit comments: it names the
// file in spec's environment and writes from it until the returned stop,
// which waits for the last write.
func (a *attempt) startProgress(ctx context.Context, hb *runHeartbeat, workDir string, spec *procrun.Spec) (stop func()) {
	e, p := a.e, a.p
	ed, ok := p.Tracker.(platforms.CommentEditor)
	if !p.ProgressComment || !ok {
		return func() {}
	}
	path := ProgressFile(workDir)
	spec.Env = append(spec.Env, ProgressFileEnv+"="+path)
	c := &progressComment{ed: ed, ref: a.req.Ref, path: path, every: e.cfg.ProgressInterval,
		body: func(lines string) string {
			return safeComment(p.Redact, progressBody(e.cfg.Labels.Prefix, a.req.Attempt, e.cfg.Instance, p.Redact.String(lines)))
		},
		fence: a.newFence(hb), clock: e.cfg.Clock, log: a.log}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); c.run(pctx, min(c.every, time.Second)) }()
	return func() { cancel(); <-done }
}

// runPipeline runs spec, under a run guard when one is configured.
func (e *Executor) runPipeline(ctx context.Context, spec procrun.Spec, ref platforms.Ref, token string) procrun.Result {
	spec.Cgroups = e.cfg.Cgroups
	if e.cfg.Guard == nil {
		return procrun.Run(ctx, spec)
	}
	guarded, done, err := e.cfg.Guard.Wrap(spec, ref, token, e.heartbeatWindow())
	if err != nil {
		return procrun.Result{ExitCode: -1, Err: err}
	}
	defer done()
	return procrun.Run(ctx, guarded)
}

// retryTransient calls f until it succeeds, fails permanently (lost run,
// state changed, illegal transition, a 4xx the tracker will answer again:
// platforms.ErrRejected) or ctx ends, backing off between tries.
func retryTransient(ctx context.Context, f func() error) error {
	backoff := 200 * time.Millisecond
	for {
		err := f()
		if err == nil || errors.Is(err, errLostRun) || errors.Is(err, errStateChanged) || errors.Is(err, ErrIllegalTransition) ||
			errors.Is(err, platforms.ErrRejected) {
			return err
		}
		if !sleepCtx(ctx, backoff) {
			return err
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// handBack returns a run stopped by shutdown to the queue: InProgress →
// Enqueued, release the run, push a request with the same attempt.
func (a *attempt) handBack(ctx context.Context, t *platforms.Ticket) {
	e, req, log := a.e, a.req, a.log
	if _, err := a.move(ctx, t, InProgress, Enqueued); err != nil {
		log.Error("hand back: transition to enqueued", zap.Error(err))
		return
	}
	a.releaseRun(false)
	next := PipelineRequest{ID: redislock.NewToken(), Ref: req.Ref, Source: SourceHandBack, Attempt: req.Attempt,
		EnqueuedAt: e.cfg.Clock().UTC(), Priority: req.Priority}
	if err := e.queue.Push(ctx, next.Encode()); err != nil {
		log.Error("hand back: push request (EnqueuedReconciler will re-push)", zap.Error(err))
		return
	}
	log.Info("handed the ticket back on shutdown", zap.String("newRequestId", next.ID))
}

// runHeartbeat keeps one run's heartbeat alive. If the heartbeat is taken
// over, cannot be renewed before it would expire, or the replica's liveness
// lapses, kill is closed (the pipeline dies at once) and lostErr reports why:
// someone else may already own the ticket.
type runHeartbeat struct {
	kill       chan struct{}
	done       chan struct{}
	wg         sync.WaitGroup
	lost       atomic.Pointer[error]
	validUntil atomic.Int64 // unix nanos: the local deadline of the last renewal
	stopOnce   sync.Once
}

func (h *runHeartbeat) lostErr() error {
	if p := h.lost.Load(); p != nil {
		return *p
	}
	return nil
}

func (h *runHeartbeat) stop() {
	h.stopOnce.Do(func() { close(h.done) })
	h.wg.Wait()
}

// valid reports whether the heartbeat is still trusted locally.
func (h *runHeartbeat) valid(now time.Time) bool {
	return h.lostErr() == nil && now.UnixNano() < h.validUntil.Load()
}

func (a *attempt) startHeartbeat(ctx context.Context) *runHeartbeat {
	e := a.e
	h := &runHeartbeat{kill: make(chan struct{}), done: make(chan struct{})}
	// runstate.Take set the heartbeat just before: trust it from now.
	h.validUntil.Store(e.heartbeatWindow().Until(e.cfg.Clock()).UnixNano())
	h.wg.Go(func() {
		if err := a.heartbeat(ctx, h); err != nil {
			h.lost.Store(&err)
			close(h.kill)
		}
	})
	return h
}

func (a *attempt) heartbeat(ctx context.Context, h *runHeartbeat) error {
	e, ref, token := a.e, a.req.Ref, a.token
	ttl, every := e.cfg.HeartbeatTTL, e.cfg.HeartbeatRenew
	window := e.heartbeatWindow()
	var livenessLost <-chan struct{}
	if e.cfg.Liveness != nil {
		livenessLost = e.cfg.Liveness.Lost()
	}
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	deadline := time.NewTimer(window.Trusted)
	defer deadline.Stop()
	for {
		select {
		case <-h.done:
			return nil
		case <-livenessLost:
			return errors.New("replica liveness lapsed")
		case <-deadline.C:
			return fmt.Errorf("heartbeat not renewed within %s", window.Trusted)
		case <-ticker.C:
			start := e.cfg.Clock()
			if !h.valid(start) {
				// The deadline timer is ready too; don't let a renewal
				// start after the trust ended.
				return fmt.Errorf("heartbeat not renewed within %s", window.Trusted)
			}
			// A renewal that hangs (a partition that drops packets) ends at
			// the trust deadline at the latest: the deadline timer is only
			// looked at between renewals, and the pipeline must be killed
			// then, before the heartbeat can expire and another replica
			// take the run.
			timeout := min(every, time.Duration(h.validUntil.Load()-start.UnixNano()))
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
			// Nor may it hold back a liveness lapse, which the select
			// above sees only between renewals.
			watched := make(chan struct{})
			if livenessLost != nil {
				go func() {
					select {
					case <-livenessLost:
						cancel()
					case <-watched:
					}
				}()
			}
			ok, err := runstate.Renew(rctx, e.rdb, ref, token, ttl)
			close(watched)
			cancel()
			switch {
			case err != nil:
				e.log.Warn("renew heartbeat", zap.String("ticketId", ref.ID), zap.Error(err))
			case !ok:
				return errors.New("heartbeat taken over")
			default:
				if p, ok := e.projects.Lookup(ref); ok {
					e.renewSlots(ctx, p, token, start.Add(ttl))
				}
				until := window.Until(start)
				h.validUntil.Store(until.UnixNano())
				deadline.Reset(until.Sub(e.cfg.Clock()))
			}
		}
	}
}

// heartbeatWindow is how long a run trusts its heartbeat after each
// renewal: trust.DefaultHeartbeatTrust of the TTL, a narrower margin than a
// lease's because losing it kills the pipeline (pkg/trust says why).
func (e *Executor) heartbeatWindow() trust.Window {
	return trust.Fraction(e.cfg.HeartbeatTTL, trust.DefaultHeartbeatTrust)
}

// fence returns the check made immediately before every label write of a
// run: the heartbeat must still be trusted locally (renewed recently, replica
// live) and must still hold this run's token in Redis. Writes also carry it
// in their context, so the tracker transport repeats it after any rate-limit
// wait, right before the request goes out.
func (a *attempt) newFence(hb *runHeartbeat) func(context.Context) error {
	e, ref, token := a.e, a.req.Ref, a.token
	return func(ctx context.Context) error {
		if hb != nil && !hb.valid(e.cfg.Clock()) {
			return fmt.Errorf("%w: heartbeat no longer trusted locally", errLostRun)
		}
		if e.cfg.Liveness != nil && !e.cfg.Liveness.Valid() {
			return fmt.Errorf("%w: replica liveness lapsed", errLostRun)
		}
		ok, err := runstate.Check(ctx, e.rdb, ref, token)
		if err != nil {
			return fmt.Errorf("%w: %w", errFenceUnread, err)
		}
		if !ok {
			return errLostRun
		}
		return nil
	}
}

// executorOutcomes names what each of the executor's transitions means.
var executorOutcomes = map[State]string{InProgress: "started", Done: "succeeded", Failed: "failed", Enqueued: "handed back"}

// move writes from → to, fenced, retrying on a platform conflict after a
// re-read as long as the ticket is still in from. The attempt's started is
// when the pipeline started (zero before it has).
func (a *attempt) move(ctx context.Context, t *platforms.Ticket, from, to State) (*platforms.Ticket, error) {
	return a.moveAs(ctx, t, from, to, executorOutcomes[to], "")
}

// moveAs is move reporting the transition with outcome and reason.
//
// A write can fail half done: GitHub's Relabel adds the new label before it
// removes the old ones, so a failed removal leaves both, which StateOf reads
// as the further state. So a failure other than a conflict is retried (up
// to maxTransientTries, with backoff, each try fenced) after reading the
// ticket again, and a ticket that already shows the target state then is
// this write half done: it is finished (the labels left over removed)
// instead of being reported as a state change.
func (a *attempt) moveAs(ctx context.Context, t *platforms.Ticket, from, to State, outcome, reason string) (*platforms.Ticket, error) {
	e, p, req, started, fence := a.e, a.p, a.req, a.started, a.fence
	if err := Check(from, to, OwnerExecutor); err != nil {
		return nil, err // before reading anything; Relabel asks again before the write
	}
	var err error
	conflicts, transient := 0, 0
	// A ticket carrying from's label while reading as to is this transition
	// half done, by an earlier try or by a run that died between the add and
	// the removal; the caller holds the run lock, so it is ours to finish.
	halfDone := t != nil && t.HasLabel(e.cfg.Labels.Label(from)) && e.cfg.Labels.StateOf(t.Labels) == to
	retry := func() bool {
		transient++
		return transient < maxTransientTries && !errors.Is(err, errLostRun) && !errors.Is(err, platforms.ErrRejected) &&
			sleepCtx(ctx, min(time.Duration(transient)*200*time.Millisecond, 2*time.Second))
	}
	for {
		if t == nil {
			if t, err = p.Tracker.Get(ctx, req.Ref); err != nil {
				if errors.Is(err, platforms.ErrNotFound) || !retry() {
					return nil, fmt.Errorf("re-read: %w", err)
				}
				continue
			}
		}
		if s := e.cfg.Labels.StateOf(t.Labels); s != from && !(halfDone && s == to) {
			return nil, fmt.Errorf("%w: %s, expected %s", errStateChanged, s, from)
		}
		if err = fence(ctx); err != nil {
			return nil, err
		}
		var nt *platforms.Ticket
		nt, err = Relabel(trackerhttp.WithFence(ctx, fence), p.Tracker, e.cfg.Labels, t, from, to, OwnerExecutor)
		if err == nil {
			ev := Event{Kind: EventTransition, At: e.cfg.Clock().UTC(), Ref: req.Ref, From: from, To: to,
				Outcome: outcome, Reason: reason, Attempt: req.Attempt, Owner: OwnerExecutor, Instance: e.cfg.Instance,
				Source: req.Source, RequestID: req.ID}
			if to == InProgress && !req.EnqueuedAt.IsZero() {
				ev.Wait = ev.At.Sub(req.EnqueuedAt)
			}
			if !started.IsZero() {
				ev.Run = ev.At.Sub(started)
			}
			if to.Terminal() && !req.ClaimedAt.IsZero() {
				ev.Lead = ev.At.Sub(req.ClaimedAt)
			}
			Emit(e.log, e.cfg.Observer, ev)
			return nt, nil
		}
		if _, refused := e.refusals.Refused(ctx, p, t, RefusalOpTransition, OwnerExecutor, req.Source, err); refused {
			return nil, fmt.Errorf("transition %s → %s: %w", from, to, err)
		}
		t = nil // read it again: someone else wrote it, or our write may be half done
		if errors.Is(err, platforms.ErrPreconditionFailed) {
			if conflicts++; conflicts == 4 {
				return nil, fmt.Errorf("transition %s → %s: %w", from, to, err)
			}
			continue
		}
		if !retry() {
			return nil, fmt.Errorf("transition %s → %s: %w", from, to, err)
		}
		halfDone = true
	}
}

// maxTransientTries bounds moveAs's tries after transient tracker failures
// (backoff 200 ms, 400 ms): short, because before InProgress the heartbeat
// is not renewed yet; a transition still failing is given back, and the
// next take finishes it (handle accepts a half-done start).
const maxTransientTries = 3

func (a *attempt) releaseRun(terminal bool) {
	e, ref, token, log := a.e, a.req.Ref, a.token, a.log
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := runstate.Release(ctx, e.rdb, ref, token, terminal); err != nil {
		log.Warn("release run (the heartbeat will expire)", zap.Error(err))
	}
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
