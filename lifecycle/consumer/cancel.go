package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// DefaultCancelCheck is how often a running pipeline's cancel key is read:
// one GET per running pipeline, so a cancellation stops it within seconds.
const DefaultCancelCheck = 5 * time.Second

func isTrackerCause(cause string) bool {
	return cause == lifecycle.CauseClosed || cause == lifecycle.CauseUntriggered
}

// cancelCause decides whether t's request or run must stop, given the cause
// requested through the cancel key ("" for none). The ticket's own state wins;
// a tracker-derived request the fresh snapshot does not confirm is void.
func cancelCause(t *platforms.Ticket, trigger, requested string) string {
	if c := lifecycle.TrackerCause(t, trigger); c != "" {
		return c
	}
	if requested != "" && !isTrackerCause(requested) {
		return requested
	}
	return ""
}

// clearCancel deletes the ticket's cancel key if it still says cause (""
// deletes whatever it says), so a newer request is never lost.
func clearCancel(ctx context.Context, rdb redis.Cmdable, ref platforms.Ref, cause string, log *zap.Logger) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := runstate.ClearCancel(cctx, rdb, ref, cause); err != nil {
		log.Warn("clear cancel request (it expires on its own)", zap.Error(err))
	}
}

// cancelQueued runs after the consumer took the run of a request and before
// anything starts: a ticket found closed or untriggered, or with an
// operator's cancel request, goes Enqueued → Failed with a comment instead
// of running. It reports whether it handled (and acked) the request.
func (a *attempt) cancelQueued(ctx context.Context, t *platforms.Ticket) bool {
	e, p, req, log := a.e, a.p, a.req, a.log
	requested, err := runstate.RequestedCancel(ctx, e.rdb, req.Ref)
	if err != nil {
		log.Warn("read cancel request; running the request", zap.Error(err))
	}
	cause := cancelCause(t, p.TriggerLabel, requested)
	if cause == "" {
		// A snapshot that is not the tracker's answer (the claim's, see
		// checkStart) cannot void a request the tracker caused: the
		// answer of the start decides it.
		if requested != "" && (t.Whole || !isTrackerCause(requested)) {
			log.Info("cancel request not confirmed by the ticket; running it", zap.String("requested", requested))
			clearCancel(ctx, e.rdb, req.Ref, requested, log)
		}
		return false
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	a.failCancelled(wctx, lifecycle.Enqueued, cause)
	return true
}

// failCancelled posts the cancellation comment and moves the ticket from →
// Failed, every write fenced by the run's heartbeat, then ends the run and
// forgets the ticket's attempt count and cancel request: nothing runs again
// until the ticket is triggered again.
func (a *attempt) failCancelled(ctx context.Context, from lifecycle.State, cause string) {
	e, p, req, started, log := a.e, a.p, a.req, a.started, a.log
	body := cancelComment(e.cfg.Labels, p.TriggerLabel, cause, from, req.Attempt, started, e.cfg.Clock())
	if n := noteLines(append(append([]string(nil), a.workNotes...), a.resultNotes...)); n != "" {
		body += "\n\n" + n
	}
	if r := renderResult(p.Redact, p.Platform, a.result); r != "" {
		body += "\n" + r
	}
	body = lifecycle.TruncateRunes(body, platforms.CommentLimit(p.Tracker))
	// Told once per cancel request: a request honoured again, because the
	// move to Failed below did not land, only finishes the move.
	told, err := runstate.CancelTold(ctx, e.rdb, req.Ref)
	if err != nil {
		log.Warn("read whether the cancellation was told; telling it", zap.Error(err))
	}
	if told {
		log.Info("cancellation already told on the ticket; not commenting again", zap.String("cause", cause))
	} else if err := a.postComment(ctx, body, ""); err != nil {
		if errors.Is(err, errLostRun) {
			log.Warn("run lost its ownership before the cancellation comment", zap.Error(err))
			return
		}
		log.Error("post cancellation comment", zap.Error(err))
	} else if err := runstate.MarkCancelTold(context.WithoutCancel(ctx), e.rdb, req.Ref, cause, keys.CancelToldTTL); err != nil {
		log.Warn("mark the cancellation told (a request honoured again tells it again)", zap.Error(err))
	}
	// The comment changed the ticket's version: move re-reads it.
	err = retryTransient(ctx, func() error {
		_, err := a.moveAs(ctx, nil, from, lifecycle.Failed, "cancelled", cause)
		return err
	})
	terminal := true
	switch {
	case errors.Is(err, errStateChanged):
		log.Info("cancelled ticket changed state meanwhile; leaving it", zap.Error(err))
	case err != nil && from == lifecycle.InProgress:
		log.Error("transition to failed after cancellation (the heartbeat expires and StaleJobDetector takes over)", zap.Error(err))
		return
	case err != nil:
		// Still Enqueued, without a request: EnqueuedReconciler re-pushes
		// it, and the cancel request, kept, is honoured again then.
		log.Error("transition to failed after cancellation (EnqueuedReconciler will re-push it)", zap.Error(err))
		terminal = false
	}
	// Terminal: forgets the attempt count and the cancel request too.
	a.releaseRun(terminal)
}

func cancelComment(labels lifecycle.Labels, trigger, cause string, from lifecycle.State, attempt int, started, now time.Time) string {
	what := "not run"
	if from == lifecycle.InProgress && !started.IsZero() {
		what = "pipeline stopped after " + now.Sub(started).Round(time.Second).String()
	}
	return fmt.Sprintf("**%s**: cancelled (%s): %s, attempt %d. Remove `%s` and add `%s` to run it again.",
		labels.Prefix, cause, what, attempt, labels.Label(lifecycle.Failed), trigger)
}

// cancelWatch reads a running pipeline's cancel key every CancelCheck. A
// request is confirmed before it acts (a tracker cause on a fresh read of the
// ticket); then kill is closed, which SIGKILLs the pipeline's group, and
// cause says why.
type cancelWatch struct {
	kill     chan struct{}
	done     chan struct{}
	wg       sync.WaitGroup
	cause    atomic.Pointer[string]
	stopOnce sync.Once
}

func (w *cancelWatch) stop() {
	w.stopOnce.Do(func() { close(w.done) })
	w.wg.Wait()
}

// causeOf is the confirmed cancellation cause, "" when not cancelled.
func (w *cancelWatch) causeOf() string {
	if p := w.cause.Load(); p != nil {
		return *p
	}
	return ""
}

func (a *attempt) watchCancel(ctx context.Context) *cancelWatch {
	e, log := a.e, a.log
	w := &cancelWatch{kill: make(chan struct{}), done: make(chan struct{})}
	w.wg.Go(func() {
		t := time.NewTicker(e.cfg.CancelCheck)
		defer t.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if cause := a.confirmCancel(ctx); cause != "" {
				w.cause.Store(&cause)
				close(w.kill)
				log.Info("cancelling the running pipeline", zap.String("cause", cause))
				return
			}
		}
	})
	return w
}

// confirmCancel returns the cause to stop a running pipeline for, "" when
// none is requested or the request is not confirmed. Only a request costs a
// tracker call.
func (a *attempt) confirmCancel(ctx context.Context) string {
	e, p, ref, log := a.e, a.p, a.req.Ref, a.log
	rctx, cancel := context.WithTimeout(ctx, e.cfg.CancelCheck)
	defer cancel()
	requested, err := runstate.RequestedCancel(rctx, e.rdb, ref)
	if err != nil || requested == "" {
		return ""
	}
	if !isTrackerCause(requested) {
		return requested
	}
	t, err := p.Tracker.Get(rctx, ref)
	if err != nil {
		log.Warn("read ticket to confirm cancel request; trying again", zap.Error(err))
		return ""
	}
	cause := cancelCause(t, p.TriggerLabel, requested)
	if cause == "" {
		log.Info("cancel request not confirmed by the ticket; ignoring it", zap.String("requested", requested))
		clearCancel(ctx, e.rdb, ref, requested, log)
	}
	return cause
}

// eitherClosed returns a channel closed when a or b is closed; done releases
// its goroutine.
func eitherClosed(a, b, done <-chan struct{}) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		select {
		case <-a:
			close(out)
		case <-b:
			close(out)
		case <-done:
		}
	}()
	return out
}

// answersWhole reports whether tr answers a label write with the whole
// ticket (platforms.WholeAnswers).
func answersWhole(tr platforms.Tracker) bool {
	w, ok := tr.(platforms.WholeAnswers)
	return ok && w.AnswersWhole()
}

// freshClaim reports whether req is the claim's own request taken the
// first time (runstate.TakeClaimFresh); on a Redis error it is not, and
// the ticket is read.
func (e *Executor) freshClaim(ctx context.Context, req lifecycle.PipelineRequest, log *zap.Logger) bool {
	fresh, err := runstate.TakeClaimFresh(ctx, e.rdb, req.Ref, req.ID)
	if err != nil {
		log.Warn("read whether the request is the claim's first; reading the ticket", zap.Error(err))
	}
	return fresh
}

// takeSnapshot is the ticket a take decides on: the claim's Observed when
// fromClaim (no call), else a read.
func (e *Executor) takeSnapshot(ctx context.Context, p *lifecycle.Project, req lifecycle.PipelineRequest, fromClaim bool) (*platforms.Ticket, error) {
	if fromClaim {
		return req.Observed.Snapshot(req.Ref), nil
	}
	return p.Tracker.Get(ctx, req.Ref)
}

// checkStart checks the answer of a move to InProgress written from the
// claim's snapshot instead of a read, as handle checks a read: the write
// was refused had another writer moved the ticket's lifecycle labels (a
// revision test on Azure DevOps, a foreign lifecycle label in the answer
// elsewhere), so what is left to see is what a person may have done since
// the claim without touching them. A ticket the answer shows closed or
// without its trigger label, or with an operator's cancel request, ends
// InProgress → Failed with the cancellation comment and nothing run, as
// Enqueued → Failed would after a read; a tracker-derived cancel request
// the answer does not confirm is void. An answer that is not the whole
// ticket (a fallback write path) is followed by a read, so it costs the
// call the take saved; if that read fails the ticket is handed back. It
// returns the ticket to run and whether to run it.
func (a *attempt) checkStart(ctx context.Context, t *platforms.Ticket) (*platforms.Ticket, bool) {
	e, p, req, log := a.e, a.p, a.req, a.log
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if !t.Whole {
		rt, err := p.Tracker.Get(ctx, req.Ref)
		if err != nil {
			log.Warn("read the ticket after the start (its answer was labels only); handing it back", zap.Error(err))
			a.handBack(wctx, t)
			return nil, false
		}
		t = rt
		if s := a.labels().StateOf(t.Labels); s != lifecycle.InProgress {
			log.Info("ticket left in-progress right after the start; not running it", zap.String("state", s.String()))
			a.releaseRun(false)
			return nil, false
		}
	}
	requested, err := runstate.RequestedCancel(ctx, e.rdb, req.Ref)
	if err != nil {
		log.Warn("read cancel request; running the request", zap.Error(err))
	}
	cause := cancelCause(t, p.TriggerLabel, requested)
	if cause == "" {
		if requested != "" {
			log.Info("cancel request not confirmed by the ticket; running it", zap.String("requested", requested))
			clearCancel(ctx, e.rdb, req.Ref, requested, log)
		}
		return t, true
	}
	log.Info("ticket changed between claim and take; not running it", zap.String("cause", cause))
	a.failCancelled(wctx, lifecycle.InProgress, cause)
	return nil, false
}
