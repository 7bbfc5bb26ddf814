package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// failed handles a failed attempt while the run still owns the ticket: it
// runs the project's persist command, saves the work branch as a [wip]
// commit (workbranch.go), posts the failure comment, then
// retries the ticket after its backoff (InProgress → Enqueued, the next
// attempt in the delayed set), escalates it (Failed, plus the escalation
// label and mentions), or fails it.
func (a *attempt) failed(ctx context.Context, t *platforms.Ticket, res procrun.Result) {
	e, p, req, hb, log := a.e, a.p, a.req, a.hb, a.log
	kind, retryable := p.Pipeline.classify(res, req.Attempt)
	var delay time.Duration
	if kind == failRetry {
		delay = p.Pipeline.Retry.Backoff.Delay(req.Attempt, e.cfg.Rand())
	}
	// The result's description carries git's stderr when the work branch
	// could not be prepared, which may quote the secrets or paths of the
	// pipeline: it reaches the [wip] commit, the audit stream, the status
	// page and the daemon's log redacted.
	reason := p.Redact.String(res.Describe())
	// A failure that ends the ticket is recorded before the persist
	// command and the save, and again with its comment after them: from
	// here on its outcome is written from the record (outcome.go). A
	// retry is not: a lost one is reverted and retried by StaleJobDetector.
	var o runstate.Outcome
	recorded := false
	if kind != failRetry {
		escalate := ""
		if kind == failEscalate {
			escalate = p.Pipeline.Escalate.Label
		}
		o = a.newOutcome(Failed, kind.outcome(), reason, "", "", escalate)
		recorded = a.recordOutcome(o)
	}
	notes := a.persist(ctx, t, kind)
	notes = append(notes, a.saveWork(ctx, WorkDir(e.cfg.WorkDir, req.Ref), false, reason, 0)...)
	notes = append(notes, a.resultNotes...)
	if lost := hb.lostErr(); lost != nil {
		log.Warn("run lost its ownership while persisting; no label written by this run", zap.Bool("outcomeRecorded", recorded), zap.Error(lost))
		a.releaseRun(false)
		return
	}
	// The outcome must be written even while shutting down.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.WriteTimeout)
	defer cancel()
	headline, limit := failureHeadline(e.cfg.Labels.Prefix, p, kind, retryable, req.Attempt, delay), platforms.CommentLimit(p.Tracker)
	if r := renderResult(p.Redact, p.Platform, a.result); r != "" {
		headline += "\n\n" + r
	}
	body := outcomeComment(headline, e.cfg.Instance, res, notes, limit)
	short := shortOutcomeComment(headline, e.cfg.Instance, res, notes, limit)
	if kind != failRetry {
		o.Body, o.Short = safeComment(p.Redact, body), safeComment(p.Redact, short)
		o.Branch, o.Commit = a.branch, a.pushed
		recorded = recorded && a.recordOutcome(o)
		a.finishRun(wctx, nil, o, recorded)
		return
	}
	if err := a.postComment(wctx, body, short); err != nil {
		if errors.Is(err, errLostRun) {
			log.Warn("run lost its ownership before the failure comment", zap.Error(err))
			return
		}
		log.Error("post failure comment", zap.Error(err))
	}
	a.retryLater(wctx, delay, reason)
}

// retryLater hands the ticket back for its next attempt: InProgress →
// Enqueued, the run released (its attempt count kept), and the next
// request put in the delayed set, due after the backoff. Were the daemon to
// die between the transition and the delay, the ticket is Enqueued without a
// request and EnqueuedReconciler re-pushes it.
func (a *attempt) retryLater(ctx context.Context, delay time.Duration, reason string) {
	e, req, log := a.e, a.req, a.log
	next := NextAttempt(req.Attempt)
	why := fmt.Sprintf("%s; attempt %d in %s", reason, next, delay)
	if err := retryTransient(ctx, func() error {
		_, err := a.moveAs(ctx, nil, InProgress, Enqueued, failRetry.outcome(), why)
		return err
	}); err != nil {
		log.Error("transition to enqueued for a retry (the heartbeat expires and StaleJobDetector takes over)", zap.Error(err))
		return
	}
	// While the heartbeat is held no re-push happens; from its release on, a
	// lost request is re-pushed as the attempt recorded here.
	if err := runstate.Due(ctx, e.rdb, req.Ref, next); err != nil {
		log.Warn("record the next attempt (a lost retry would re-run this one)", zap.Error(err))
	}
	a.releaseRun(false)
	due := e.cfg.Clock().Add(delay)
	nreq := PipelineRequest{ID: redislock.NewToken(), Ref: req.Ref, Source: SourceRetry, Attempt: next,
		EnqueuedAt: due.UTC(), Priority: req.Priority}
	if err := e.queue.Delay(ctx, nreq.Encode(), due); err != nil {
		log.Error("delay the retry (EnqueuedReconciler will re-push)", zap.Error(err))
		return
	}
	log.Info("retry scheduled", zap.Int("nextAttempt", next), zap.Duration("backoff", delay), zap.String("newRequestId", nreq.ID))
}

// addLabel adds label, a non-lifecycle label, to the ticket, fenced and
// re-read after a conflict.
func (a *attempt) addLabel(ctx context.Context, label string) error {
	e, p, ref, fence := a.e, a.p, a.req.Ref, a.fence
	return retryTransient(ctx, func() error {
		var err error
		for try := 0; try < 4; try++ {
			var t *platforms.Ticket
			if t, err = p.Tracker.Get(ctx, ref); err != nil {
				return fmt.Errorf("re-read: %w", err)
			}
			if t.HasLabel(label) {
				return nil
			}
			if err = fence(ctx); err != nil {
				return err
			}
			if _, err = AddLabel(trackerhttp.WithFence(ctx, fence), p.Tracker, e.cfg.Labels, t, label); !errors.Is(err, platforms.ErrPreconditionFailed) {
				return err
			}
		}
		return err
	})
}

// failureHeadline is the first line of the failure comment: what happened
// and what happens next. "attempt k of n" appears only when another attempt
// follows; a failure that ends the ticket says why nothing retries it.
func failureHeadline(prefix string, p *Project, kind failureKind, retryable bool, attempt int, delay time.Duration) string {
	h := fmt.Sprintf("**%s**: pipeline failed", prefix)
	switch {
	case kind == failRetry:
		return fmt.Sprintf("%s (attempt %d of %d), retrying in %s", h, attempt, p.Pipeline.Attempts().Limit(), roundDelay(delay))
	case kind == failEscalate:
		h = fmt.Sprintf("%s on attempt %d and needs a person", h, attempt)
		if m := p.Pipeline.Escalate.Mention; len(m) > 0 {
			h += ": " + strings.Join(m, " ")
		}
		return h
	case retryable:
		return fmt.Sprintf("%s; attempts used up (%d of %d)", h, attempt, p.Pipeline.Attempts().Limit())
	}
	return fmt.Sprintf("%s; no retry configured (attempt %d)", h, attempt)
}

// roundDelay prints a backoff the way a person reads it.
func roundDelay(d time.Duration) string {
	if d >= 10*time.Second {
		return d.Round(time.Second).String()
	}
	return d.Round(10 * time.Millisecond).String()
}
