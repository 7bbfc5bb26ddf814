package consumer

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runbox"
	"github.com/agentsmithd/agentsmithd/lifecycle/runguard"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/gitws"
	"github.com/agentsmithd/agentsmithd/pkg/nofollow"
	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/pkg/trust"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// attempt is one run of a request, from the take of its run to the written
// outcome: the values every step of it shares, so each step takes only what
// varies per call (the ticket snapshot, the states, the outcome).
type attempt struct {
	e     *Executor
	p     *lifecycle.Project
	req   lifecycle.PipelineRequest
	token string
	log   *zap.Logger
	// stage is the stage this attempt runs, for a project with stages
	// (p is then the project as that stage sees it: Project.ForStage).
	stage string
	// started is when the pipeline started; zero before it has.
	started time.Time
	// hb is the run's heartbeat, from the take on; nil before it.
	hb *runHeartbeat
	// fence is checked before every label write: without the heartbeat
	// before the run is taken, with it once the heartbeat runs.
	fence func(context.Context) error
	// branch is the work branch prepared for this attempt; "" without a
	// workspace or when preparing it failed (then nothing is saved).
	branch string
	// result is what the pipeline wrote to $AGENTSMITH_RESULT_FILE, and
	// resultNotes the warnings reading it gave.
	result      Result
	resultNotes []string
	// workNotes say what became of the work branch after the pipeline
	// (pushed at which commit, or why not), for the outcome's comment.
	workNotes []string
	// pushed is the commit saveWork pushed to branch ("" when none was).
	pushed string
	// killUnconfirmed: the pipeline was ended by a signal the executor did
	// not send while Redis could not be read, so its run guard may have
	// killed it for a lost lock. A lock found gone when its outcome is
	// handed over is then taken as that loss (handOver), not re-taken.
	killUnconfirmed bool
	// commentBudget bounds a comment with its retries when set (default
	// commentTimeout), so the transition after it keeps time of its own.
	commentBudget time.Duration
	// leftover is why a run cgroup of this attempt (the pipeline's, the
	// persist command's) could not be emptied: processes of the run may
	// still live, and nothing of the daemon's reads or writes the work dir
	// after it (procrun.Result.Leftover).
	leftover error
	// box is the run's sandbox while it is open (nil without one).
	box *runbox.Box
}

// markUsed records now as when the ticket's work dir was last used, which
// retention dates it by (MarkUsed); a failure is logged and costs the run
// nothing (retention then dates the ticket from when it first finds it
// unmarked).
func (a *attempt) markUsed() {
	e := a.e
	if err := lifecycle.MarkUsed(lifecycle.LogsRoot(e.cfg.WorkDir, e.cfg.LogsDir), a.req.Ref, e.cfg.Clock()); err != nil {
		a.log.Warn("record the work dir's last use", zap.Error(err))
	}
}

// execute runs the pipeline and writes the outcome, unless the run lost its
// ownership, in which case it writes nothing at all.
func (a *attempt) execute(ctx context.Context, t *platforms.Ticket) {
	e, p, req, token, log := a.e, a.p, a.req, a.token, a.log
	workDir := lifecycle.WorkDir(e.cfg.WorkDir, req.Ref)
	spec := pipelineSpec(p, t, req.Attempt, workDir, e.cfg.Instance)
	resultFile := ResultFile(workDir)
	spec.Env = append(spec.Env, "AGENTSMITH_RUN_TOKEN="+token, ResultFileEnv+"="+resultFile)
	spec.Env = append(spec.Env, a.stageEnv(ctx)...)
	spec.Grace = e.cfg.KillGrace
	spec.TailBytes = e.cfg.TailBytes
	// The heartbeat runs from the take (handle) until the outcome is
	// written, so a slow or retried final write never outlives it.
	hb := a.hb
	cw := a.watchCancel(ctx)
	defer cw.stop()
	var res procrun.Result
	var refused string // why the run guard did not start the pipeline
	lostEarly := false
	defer func() { a.box.Close() }()
	e.warnUnsandboxed(log)
	if err := os.MkdirAll(workDir, 0o750); err != nil {
		res = procrun.Result{ExitCode: -1, Err: fmt.Errorf("create work dir: %w", err)}
	} else if err := removeStale(resultFile); err != nil {
		res = procrun.Result{ExitCode: -1, Err: err}
	} else if err := removeStale(ProgressFile(workDir)); err != nil {
		res = procrun.Result{ExitCode: -1, Err: err}
	} else if a.box, err = runbox.Open(e.cfg.Sandbox, p, a.stage, req.Ref, workDir, spec.Argv, spec.Env, e.handTree(workDir), log); err != nil {
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
		// and the run guard, which stop the run when the lock is gone; it
		// costs no attempt here.
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
		a.box.Apply(&spec)
		res, refused = e.runPipeline(ctx, spec, req.Ref, token)
		a.noteLeftover(res)
		a.box.Close()
		a.box.Ended(res)
		boxNotes := a.escapeNotes(a.box.Notes())
		if why := stopProgress(); why != "" {
			a.resultNotes = append(a.resultNotes, "progress file refused: "+why)
		}
		close(ran)
		res.Tail = red.finish()
		if out != nil {
			_ = out.Close()
		}
		var notes []string
		var refused error
		a.result, notes, refused = readResult(resultFile, a.runUID())
		if refused != nil {
			log.Warn("result file refused, not read", zap.String("path", resultFile), zap.String("why", refusal(refused)))
		}
		a.resultNotes = append(a.resultNotes, notes...)
		var dropped []string
		a.result, dropped = redactResult(p.Redact, a.result)
		a.resultNotes = append(append(a.resultNotes, dropped...), boxNotes...)
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
	// ticket with the guard's kill instead of running it again. So is a
	// guard's own failure (its report says why) while the lock is not this
	// run's: the guard found the run lost before the start and never
	// started the pipeline.
	guardRefused := refused != "" && res.Signal == "" && res.ExitCode == runguard.ExitOwnFailure
	if (res.Signal != "" || guardRefused) && !res.Killed && !res.TimedOut && !res.Canceled {
		fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		err := a.newFence(hb)(fctx)
		fcancel()
		switch {
		case errors.Is(err, errLostRun) && guardRefused:
			log.Warn("run lost its ownership before its pipeline started; its run guard did not start it, no outcome recorded, no label written",
				zap.Error(err), zap.String("guard", refused))
			a.releaseRun(false)
			return
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
		a.failCancelled(wctx, lifecycle.InProgress, cause)
		return
	}
	switch {
	case res.Canceled:
		a.workNotes = a.saveWork(ctx, workDir, false, "stopped by shutdown, handed back", handBackSaveTimeout)
		a.handBack(wctx, t)
	case guardRefused:
		a.refusedStart(ctx, wctx, t, res, refused)
	case res.OK() && a.nextStage() != "":
		a.stageSucceeded(ctx, wctx, t, res, workDir)
	case res.OK():
		// Recorded before anything else, and again with the comment once
		// the work branch is saved: a replica that dies or a tracker that
		// does not answer from here on costs the outcome nothing.
		o := a.newOutcome(lifecycle.Done, executorOutcomes[lifecycle.Done], "", "", "", "")
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
// which waits for the last write and returns why the file was refused
// ("" when it never was).
func (a *attempt) startProgress(ctx context.Context, hb *runHeartbeat, workDir string, spec *procrun.Spec) (stop func() (refused string)) {
	e, p := a.e, a.p
	ed, ok := p.Tracker.(platforms.CommentEditor)
	if !p.ProgressComment || !ok {
		return func() string { return "" }
	}
	path := ProgressFile(workDir)
	spec.Env = append(spec.Env, ProgressFileEnv+"="+path)
	c := &progressComment{ed: ed, ref: a.req.Ref, path: path, owner: a.runUID(), every: e.cfg.ProgressInterval,
		body: func(lines string) string {
			return lifecycle.SafeComment(p.Redact, progressBody(e.cfg.Labels.Prefix, a.req.Attempt, e.cfg.Instance, p.Redact.String(lines)))
		},
		fence: a.newFence(hb), clock: e.cfg.Clock, log: a.log}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); c.run(pctx, min(c.every, time.Second)) }()
	return func() string { cancel(); <-done; return c.refused }
}

// runUID is the uid the run's pipeline runs as, the only owner a file it
// leaves for the daemon to read (the progress and result files) may have
// (nofollow.OpenRegular): pipeline.run_as, else the daemon's own. Runs that
// get a uid of their own change it here.
func (a *attempt) runUID() int {
	if a.box != nil {
		return int(a.box.UID())
	}
	if c := a.p.Pipeline.RunAs; c != nil {
		return int(c.Uid)
	}
	return os.Geteuid()
}

// runPipeline runs spec, under a run guard when one is configured, and
// returns why the guard did not start the pipeline ("" when it did, or
// without a guard).
func (e *Executor) runPipeline(ctx context.Context, spec procrun.Spec, ref platforms.Ref, token string) (procrun.Result, string) {
	spec.Cgroups = e.cfg.Cgroups
	if e.cfg.Guard == nil {
		return procrun.Run(ctx, spec), ""
	}
	guarded, done, err := e.cfg.Guard.Wrap(spec, ref, token, e.heartbeatWindow())
	if err != nil {
		return procrun.Result{ExitCode: -1, Err: err}, ""
	}
	res := procrun.Run(ctx, guarded)
	return res, done()
}

// MaxRefusedStarts is how many times in a row a run guard may refuse to
// start one attempt's pipeline before the attempt fails.
const MaxRefusedStarts = 3

// DefaultRefusedStartDelay is how long a ticket whose run guard did not
// start its pipeline waits before the same attempt is taken again.
const DefaultRefusedStartDelay = 5 * time.Second

// refusedStart handles a pipeline its run guard did not start (why, from
// the guard's report) while the run is still this executor's: a failure of
// the daemon's own (a trust window the guard measured as spent, a guard
// that could not start), not of the pipeline, so it costs no attempt. The
// ticket goes back to Enqueued and the same attempt waits
// RefusedStartDelay in the delayed set; the MaxRefusedStarts-th refusal
// in a row fails the attempt as a start failure, the guard's reason in
// its comment.
func (a *attempt) refusedStart(ctx, wctx context.Context, t *platforms.Ticket, res procrun.Result, why string) {
	e, p, req, log := a.e, a.p, a.req, a.log
	why = p.Redact.String(firstLine(why, 300))
	n := req.GuardRefusals + 1
	log.Warn("the run guard did not start the pipeline; the daemon's failure, not the pipeline's",
		zap.String("guard", why), zap.Int("refusals", n), zap.Int("max", MaxRefusedStarts))
	if n >= MaxRefusedStarts {
		res.Err = fmt.Errorf("the run guard did not start the pipeline (%d times in a row)", n)
		a.resultNotes = append(a.resultNotes, "run guard: "+escapeFor(p.Redact, p.Platform, why))
		a.failed(ctx, t, res)
		return
	}
	delay := e.cfg.RefusedStartDelay
	reason := fmt.Sprintf("the run guard did not start the pipeline (%s); attempt %d again in %s", why, req.Attempt, delay)
	if err := retryTransient(wctx, func() error {
		_, err := a.moveAs(wctx, nil, lifecycle.InProgress, lifecycle.Enqueued, executorOutcomes[lifecycle.Enqueued], reason)
		return err
	}); err != nil {
		log.Error("transition to enqueued after a refused start (the heartbeat expires and StaleJobDetector takes over)", zap.Error(err))
		return
	}
	a.releaseRun(false)
	due := e.cfg.Clock().Add(delay)
	next := lifecycle.PipelineRequest{ID: redislock.NewToken(), Ref: req.Ref, Source: req.Source, Attempt: req.Attempt,
		EnqueuedAt: due.UTC(), ClaimedAt: req.ClaimedAt, Priority: req.Priority, Stage: a.stage, Pool: a.p.PoolFor(a.stage), GuardRefusals: n}
	if err := e.queue.Delay(wctx, next.Encode(), delay); err != nil {
		log.Error("delay the refused start's request (EnqueuedReconciler will re-push)", zap.Error(err))
		return
	}
	log.Info("refused start handed back", zap.Duration("delay", delay), zap.String("newRequestId", next.ID))
}

// retryTransient calls f until it succeeds, fails permanently (lost run,
// state changed, illegal transition, a 4xx the tracker will answer again:
// platforms.ErrRejected) or ctx ends, backing off between tries.
func retryTransient(ctx context.Context, f func() error) error {
	backoff := 200 * time.Millisecond
	for {
		err := f()
		if err == nil || errors.Is(err, errLostRun) || errors.Is(err, errStateChanged) || errors.Is(err, lifecycle.ErrIllegalTransition) ||
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
	if _, err := a.move(ctx, t, lifecycle.InProgress, lifecycle.Enqueued); err != nil {
		log.Error("hand back: transition to enqueued", zap.Error(err))
		return
	}
	a.releaseRun(false)
	next := lifecycle.PipelineRequest{ID: redislock.NewToken(), Ref: req.Ref, Source: lifecycle.SourceHandBack, Attempt: req.Attempt,
		EnqueuedAt: e.cfg.Clock().UTC(), Priority: req.Priority, Stage: a.stage, Pool: a.p.PoolFor(a.stage)}
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

// startHeartbeat keeps the run's heartbeat from its take, which set it:
// trusted from takenAt, read before the take was sent, as a renewal is
// trusted from before its request (the run guard measures the same window
// on the TTL Redis has left).
func (a *attempt) startHeartbeat(ctx context.Context, takenAt time.Time) *runHeartbeat {
	e := a.e
	h := &runHeartbeat{kill: make(chan struct{}), done: make(chan struct{})}
	h.validUntil.Store(e.heartbeatWindow().Until(takenAt).UnixNano())
	h.wg.Go(func() {
		if err := a.heartbeat(ctx, h); err != nil {
			if e.cfg.HeartbeatLostSignal != nil {
				e.cfg.HeartbeatLostSignal(time.Unix(0, h.validUntil.Load()), err)
			}
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
	deadline := time.NewTimer(time.Duration(h.validUntil.Load() - e.cfg.Clock().UnixNano()))
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
// warnUnsandboxed logs, for a run without a sandbox because the config
// said so, that it has the daemon's network and view of the host.
func (e *Executor) warnUnsandboxed(log *zap.Logger) {
	if e.cfg.Sandbox == nil && e.cfg.SandboxOff {
		log.Warn("sandbox.mode is off: this pipeline runs with the daemon's network and view of the host")
	}
}

// handTree returns how a sandboxed run of workDir gets it: the tree an
// earlier run left under another uid becomes the run's, never through a
// link it planted, and the run's uid may pass from the work root down.
func (e *Executor) handTree(workDir string) func(uid, gid uint32) error {
	return func(uid, gid uint32) error {
		fi, err := os.Lstat(workDir)
		if err != nil {
			return err
		}
		// Looked at before handOver, which gives the dir itself away: a
		// tree that is the uid's already is left as it is.
		st, ok := fi.Sys().(*syscall.Stat_t)
		mine := ok && st.Uid == uid && st.Gid == gid
		if err := handOver(e.cfg.WorkDir, workDir, &syscall.Credential{Uid: uid, Gid: gid}); err != nil {
			return err
		}
		if mine {
			return nil
		}
		return nofollow.ChownTree(workDir, int(uid), int(gid))
	}
}

// escapeNotes makes notes safe in the project's comments.
func (a *attempt) escapeNotes(notes []string) []string {
	out := make([]string, 0, len(notes))
	for _, n := range notes {
		out = append(out, escapeFor(a.p.Redact, a.p.Platform, n))
	}
	return out
}

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
var executorOutcomes = map[lifecycle.State]string{lifecycle.InProgress: "started", lifecycle.Done: "succeeded", lifecycle.Failed: "failed", lifecycle.Enqueued: "handed back"}

// move writes from → to, fenced, retrying on a platform conflict after a
// re-read as long as the ticket is still in from. The attempt's started is
// when the pipeline started (zero before it has).
func (a *attempt) move(ctx context.Context, t *platforms.Ticket, from, to lifecycle.State) (*platforms.Ticket, error) {
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
func (a *attempt) moveAs(ctx context.Context, t *platforms.Ticket, from, to lifecycle.State, outcome, reason string) (*platforms.Ticket, error) {
	return a.moveStageAs(ctx, t, from, to, "", outcome, reason)
}

// labels are the lifecycle labels of the attempt's project: with its
// stages, if it has any.
func (a *attempt) labels() lifecycle.Labels { return a.p.Labels(a.e.cfg.Labels) }

// moveStageAs is moveAs to stage ("": the stage the ticket is in, the
// attempt's or, for a write that did not take a run such as the
// OutcomeFinisher's, the one its labels show; none on Done).
func (a *attempt) moveStageAs(ctx context.Context, t *platforms.Ticket, from, to lifecycle.State, stage, outcome, reason string) (*platforms.Ticket, error) {
	e, p, req, started, fence := a.e, a.p, a.req, a.started, a.fence
	labels := a.labels()
	if err := lifecycle.Check(from, to, lifecycle.OwnerExecutor); err != nil {
		return nil, err // before reading anything; Relabel asks again before the write
	}
	var err error
	conflicts, transient := 0, 0
	// A ticket carrying from's label while reading as to is this transition
	// half done, by an earlier try or by a run that died between the add and
	// the removal; the caller holds the run lock, so it is ours to finish.
	halfDone := t != nil && t.HasLabel(labels.Label(from)) && labels.StateOf(t.Labels) == to
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
		if s := labels.StateOf(t.Labels); s != from && !(halfDone && s == to) {
			return nil, fmt.Errorf("%w: %s, expected %s", errStateChanged, s, from)
		}
		if err = fence(ctx); err != nil {
			return nil, err
		}
		var nt *platforms.Ticket
		m := lifecycle.Move{From: from, To: to, Stage: stage}
		if m.Stage == "" && to != lifecycle.Done && len(labels.Stages) > 0 {
			m.Stage = cmp.Or(a.stage, labels.StageOf(t.Labels))
		}
		nt, err = lifecycle.Relabel(trackerhttp.WithFence(ctx, fence), p.Tracker, labels, t, m, lifecycle.OwnerExecutor)
		if err == nil {
			ev := lifecycle.Event{Kind: lifecycle.EventTransition, At: e.cfg.Clock().UTC(), Ref: req.Ref, From: from, To: to,
				Outcome: outcome, Reason: reason, Attempt: req.Attempt, Owner: lifecycle.OwnerExecutor, Instance: e.cfg.Instance,
				Source: req.Source, RequestID: req.ID, Stage: a.stage}
			if to == lifecycle.InProgress && !req.EnqueuedAt.IsZero() {
				ev.Wait = ev.At.Sub(req.EnqueuedAt)
			}
			if !started.IsZero() {
				ev.Run = ev.At.Sub(started)
			}
			if to.Terminal() && !req.ClaimedAt.IsZero() {
				ev.Lead = ev.At.Sub(req.ClaimedAt)
			}
			lifecycle.Emit(e.log, e.cfg.Observer, ev)
			return nt, nil
		}
		if _, refused := e.refusals.Refused(ctx, p, t, lifecycle.RefusalOpTransition, lifecycle.OwnerExecutor, req.Source, err); refused {
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
// (backoff 200 ms, 400 ms): a transition still failing is given back, and
// the next take finishes it (handle accepts a half-done start).
const maxTransientTries = 3

func (a *attempt) releaseRun(terminal bool) {
	e, ref, token, log := a.e, a.req.Ref, a.token, a.log
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := runstate.Release(ctx, e.rdb, ref, token, terminal); err != nil {
		log.Warn("release run (the heartbeat will expire)", zap.Error(err))
	}
}

// DefaultPersistTimeout bounds the persist command when the project sets
// no timeout.
const DefaultPersistTimeout = 2 * time.Minute

// persist runs the project's persist command in the ticket's work dir after
// a failed attempt (an operator's hook; the seed's branch persistence is
// built in: workbranch.go), before the retry or the
// Failed label, with the pipeline's environment plus AGENTSMITH_OUTCOME. It
// never blocks the transition: a failure is logged and returned as a note
// for the failure comment. The heartbeat's kill stops it if the run is lost.
func (a *attempt) persist(ctx context.Context, t *platforms.Ticket, kind lifecycle.FailureKind) []string {
	e, p, req, token, hb, log := a.e, a.p, a.req, a.token, a.hb, a.log
	if len(p.Pipeline.PersistCommand) == 0 {
		return nil
	}
	workDir := lifecycle.WorkDir(e.cfg.WorkDir, req.Ref)
	if _, err := os.Stat(workDir); err != nil {
		log.Warn("persist command not run: no work dir", zap.Error(err))
		return []string{"persist command: not run (no work dir)"}
	}
	spec := pipelineSpec(p, t, req.Attempt, workDir, e.cfg.Instance)
	spec.Argv = p.Pipeline.PersistCommand
	spec.Env = append(spec.Env, "AGENTSMITH_RUN_TOKEN="+token, "AGENTSMITH_OUTCOME="+kind.Outcome())
	spec.Timeout = p.Pipeline.PersistTimeout
	if spec.Timeout <= 0 {
		spec.Timeout = DefaultPersistTimeout
	}
	spec.Grace = e.cfg.KillGrace
	spec.TailBytes = e.cfg.TailBytes
	spec.Kill = hb.kill
	spec.Cgroups = e.cfg.Cgroups
	box, err := runbox.Open(e.cfg.Sandbox, p, a.stage, req.Ref, workDir, spec.Argv, spec.Env, e.handTree(workDir), log)
	if err != nil {
		log.Warn("persist command not run: no sandbox", zap.Error(err))
		return []string{"persist command: not run (" + escapeFor(p.Redact, p.Platform, firstLine(err.Error(), 300)) + ")"}
	}
	defer box.Close()
	// Its output is redacted like the pipeline's: the tail is logged.
	red := a.redactOutput(nil)
	spec.Output = red
	box.Apply(&spec)
	res := procrun.Run(ctx, spec)
	a.noteLeftover(res)
	box.Close()
	res.Tail = red.finish()
	if res.OK() {
		log.Info("persist command succeeded", zap.Duration("duration", res.Duration))
		return []string{"persist command: succeeded"}
	}
	tail := strings.TrimSpace(strings.ToValidUTF8(string(res.Tail), "\uFFFD"))
	log.Warn("persist command failed; the transition goes ahead", zap.String("result", res.Describe()), zap.String("outputTail", tail))
	return []string{fmt.Sprintf("persist command: **failed** (%s); the work may not have been saved", res.Describe())}
}

// inheritedEnv is the part of the daemon's own environment a pipeline sees.
// Nothing else is inherited: the daemon's tokens and webhook secrets live in
// its environment and must not reach a pipeline unless a project passes them
// explicitly through pipeline.env.
var inheritedEnv = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TZ", "TMPDIR", "SHELL"}

// stdinPayload is the JSON a pipeline reads on stdin.
type stdinPayload struct {
	ID       string   `json:"id"`
	Platform string   `json:"platform"`
	Project  string   `json:"project"`
	Title    string   `json:"title"`
	Body     string   `json:"body"`
	Labels   []string `json:"labels"`
	URL      string   `json:"url"`
	Attempt  int      `json:"attempt"`
}

// pipelineSpec builds the process spec for one attempt on ticket t, run by
// the daemon instance (instance_id: AGENTSMITH_INSTANCE, which tells a
// pipeline's side effects apart by replica where a pid cannot: in its
// sandbox the daemon is not visible and pids are the run's own).
func pipelineSpec(p *lifecycle.Project, t *platforms.Ticket, attempt int, workDir, instance string) procrun.Spec {
	env := make([]string, 0, len(inheritedEnv)+len(p.Pipeline.Env)+len(p.Pipeline.Secrets)+8)
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	names := make([]string, 0, len(p.Pipeline.Env))
	for k := range p.Pipeline.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		env = append(env, k+"="+p.Pipeline.Env[k])
	}
	// This project's credentials only: another project's never reach it.
	for _, k := range slices.Sorted(maps.Keys(p.Pipeline.Secrets)) {
		env = append(env, k+"="+p.Pipeline.Secrets[k])
	}
	env = append(env,
		"AGENTSMITH_TICKET_ID="+t.Ref.ID,
		"AGENTSMITH_PLATFORM="+t.Ref.Platform,
		"AGENTSMITH_PROJECT="+t.Ref.Project,
		"AGENTSMITH_URL="+t.URL,
		"AGENTSMITH_TITLE="+t.Title,
		"AGENTSMITH_ATTEMPT="+strconv.Itoa(attempt),
		"AGENTSMITH_WORKDIR="+workDir,
		"AGENTSMITH_INSTANCE="+instance,
	)
	stdin, _ := json.Marshal(stdinPayload{
		ID: t.Ref.ID, Platform: t.Ref.Platform, Project: t.Ref.Project,
		Title: t.Title, Body: t.Body, Labels: t.Labels, URL: t.URL, Attempt: attempt,
	})
	return procrun.Spec{
		Argv:       p.Pipeline.Command,
		Env:        env,
		Dir:        workDir,
		Stdin:      stdin,
		Timeout:    p.Pipeline.Timeout,
		Credential: p.Pipeline.RunAs,
	}
}

// handOver makes dir, a ticket's work dir under root, usable by the
// pipeline's user when the pipeline runs as another one: dir is chowned to
// it, and each directory from root down to dir's parent gets search
// permission for others (o+x: enter, not list), which chdir into dir needs.
// Without run_as nothing changes.
func handOver(root, dir string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	// The work dir itself, never a link in its place.
	if err := nofollow.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
		return fmt.Errorf("hand the work dir to uid %d: %w", cred.Uid, err)
	}
	root = filepath.Clean(root)
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("work dir parent: %w", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, fi.Mode().Perm()|0o001); err != nil {
				return fmt.Errorf("let uid %d enter %s: %w", cred.Uid, d, err)
			}
		}
		if d == root || d == filepath.Dir(d) || !strings.HasPrefix(d, root) {
			return nil
		}
	}
}

// gitDirs are the ticket's work dir, its git dir and the git root,
// absolute.
func (a *attempt) gitDirs(workDir string) (gitws.Dirs, error) {
	work, err := filepath.Abs(workDir)
	if err != nil {
		return gitws.Dirs{}, err
	}
	git, err := filepath.Abs(lifecycle.GitDir(a.e.cfg.WorkDir, a.req.Ref))
	if err != nil {
		return gitws.Dirs{}, err
	}
	root, err := filepath.Abs(lifecycle.GitRoot(a.e.cfg.WorkDir))
	if err != nil {
		return gitws.Dirs{}, err
	}
	return gitws.Dirs{Work: work, Git: git, Root: root}, nil
}

// prepareWork brings the ticket's work dir to its work branch
// (projects[].workspace.git) before the pipeline starts: the last commit
// pushed by any earlier attempt, on any replica, or a new branch from the
// base. Without a workspace it does nothing. The heartbeat's kill stops git
// as it stops the pipeline.
func (a *attempt) prepareWork(ctx context.Context, workDir string) error {
	ws := a.p.Workspace
	if ws == nil {
		return nil
	}
	if owner := a.box.Owner(); owner != nil {
		// The run's own uid makes and owns the pipeline's repository.
		ws = ws.WithOwner(owner)
	}
	branch, err := ws.Branch(a.req.Ref.ID)
	if err != nil {
		return fmt.Errorf("work branch: %w", err)
	}
	dirs, err := a.gitDirs(workDir)
	if err != nil {
		return fmt.Errorf("work branch: %w", err)
	}
	// The pipeline's own repository is made as its user, in its work dir:
	// that user must reach the dir first.
	if err := handOver(a.e.cfg.WorkDir, workDir, a.p.Pipeline.RunAs); err != nil {
		return err
	}
	ctx, stop := a.killable(ctx)
	defer stop()
	p, err := ws.Prepare(ctx, dirs, branch)
	if err != nil {
		return fmt.Errorf("work branch %s: %w", branch, err)
	}
	a.branch = branch
	a.log.Info("work branch ready", zap.String("branch", branch), zap.Bool("resumed", p.Resumed), zap.String("head", p.Head))
	return nil
}

// saveWork commits everything in the work dir and pushes the work branch,
// before the ticket moves on: after a failure, a timeout, a cancellation or
// a shutdown hand-back as "[wip] agent-smith attempt N: <cause>", after a
// success as "agent-smith attempt N: succeeded" (nothing is committed when
// the pipeline already did). It returns the comment's note; a failed save
// is logged and noted, never blocks the transition. A run that lost its
// ownership never gets here: another replica may be working on the branch.
//
// within, when positive, bounds the save below the workspace's own timeout
// (a hand-back on shutdown must not hold the replica for a whole pipeline
// timeout).
func (a *attempt) saveWork(ctx context.Context, workDir string, ok bool, cause string, within time.Duration) []string {
	ws := a.p.Workspace
	if ws == nil || a.branch == "" || (a.hb != nil && a.hb.lostErr() != nil) {
		return nil
	}
	if a.leftover != nil {
		a.log.Error("the work branch is not saved: processes of the run may still be running, and the save would read the work dir they write",
			zap.String("branch", a.branch), zap.Error(a.leftover))
		return []string{fmt.Sprintf("work branch `%s`: **not pushed** (processes of the run could not be ended)", a.branch)}
	}
	msg := fmt.Sprintf("agent-smith attempt %d: succeeded", a.req.Attempt)
	if !ok {
		msg = fmt.Sprintf("[wip] agent-smith attempt %d: %s", a.req.Attempt, cause)
	}
	// A shutdown cancels ctx: the save is what keeps the work then, so it
	// runs on, bounded by the workspace's own timeout.
	ctx = context.WithoutCancel(ctx)
	if within > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, within)
		defer cancel()
	}
	ctx, stop := a.killable(ctx)
	defer stop()
	dirs, err := a.gitDirs(workDir)
	var s gitws.Saved
	if err == nil {
		s, err = ws.Save(ctx, dirs, a.branch, msg)
	}
	if err != nil {
		// git's message quotes paths the pipeline named: a secret may be
		// one of them.
		why := a.p.Redact.String(err.Error())
		var se *gitws.SecretError
		if errors.As(err, &se) {
			// A commit the push would send holds one of the project's
			// secrets: the note names the commit and the file, never the
			// secret (SecretError leaves it out; redacted once more).
			why = a.p.Redact.String(se.Error())
			a.log.Error("work branch not pushed: a commit holds one of the project's secrets", zap.String("branch", a.branch), zap.String("error", why))
			return []string{fmt.Sprintf("work branch `%s`: **not pushed**: %s", a.branch, escapeFor(a.p.Redact, a.p.Platform, firstLine(why, 300)))}
		}
		a.log.Warn("save the work branch; the transition goes ahead", zap.String("branch", a.branch), zap.String("error", why))
		return []string{fmt.Sprintf("work branch `%s`: **not pushed** (%s)", a.branch, escapeFor(a.p.Redact, a.p.Platform, firstLine(why, 300)))}
	}
	a.pushed = s.Head
	a.log.Info("work branch pushed", zap.String("branch", a.branch), zap.String("head", s.Head), zap.Bool("committed", s.Committed), zap.Int("merged", s.Merged))
	return []string{fmt.Sprintf("work branch `%s`: pushed at %s", a.branch, short(s.Head))}
}

// handBackSaveTimeout bounds the work branch's save when a shutdown hands
// the run back: long enough for a push, short enough that a replica
// shutting down is not held for a pipeline's timeout.
const handBackSaveTimeout = time.Minute

// killable is ctx cancelled also when the run's heartbeat is lost.
func (a *attempt) killable(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if a.hb != nil {
		stop := make(chan struct{})
		go func() {
			select {
			case <-a.hb.kill:
				cancel()
			case <-stop:
			}
		}()
		return ctx, func() { close(stop); cancel() }
	}
	return ctx, cancel
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func firstLine(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return lifecycle.TruncateRunes(s, n)
}

// noteLeftover records that a run's cgroup could not be emptied, so that
// saveWork does not act, as the daemon's user, on a work dir processes of
// the run may still write.
func (a *attempt) noteLeftover(res procrun.Result) {
	if res.Leftover == nil {
		return
	}
	a.log.Error("a run cgroup could not be emptied; processes of the run may still be running", zap.Error(res.Leftover))
	if a.leftover == nil {
		a.leftover = res.Leftover
	}
}
