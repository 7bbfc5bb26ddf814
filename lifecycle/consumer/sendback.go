package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// sendBack is what a stage's on_failure makes of its failed run.
type sendBack struct {
	// to is the stage the ticket goes back to; "" when it does not.
	to string
	// n is the send-back's number (to set) or how many the stage made
	// (usedUp), of max.
	n, max int
	// usedUp: the stage already sent the ticket back max times, so the
	// ticket fails, its comment saying so.
	usedUp bool
	// lost: the run no longer holds the ticket; it writes nothing.
	lost bool
}

// sendBackOf decides whether the attempt's failed run sends the ticket
// back (the stage's on_failure), and counts the send-back under the run's
// lock. Only a failure that would end the ticket does (kind FailFinal: not
// retried, not escalated) and only one the pipeline made by exiting
// non-zero by itself: a timeout, a kill, a cancel, a shutdown or a work
// dir that could not be prepared is no verdict on the earlier stage's
// work. A count Redis cannot make fails the ticket as without on_failure.
//
// The count is made before anything else of the send-back: a replica that
// dies after it leaves the ticket InProgress with a stale heartbeat,
// StaleJobDetector reverts it at the failing stage's label, and that stage
// runs again with one send-back used. A lost send-back is never lost
// count, so the back-and-forth stays bounded by max.
func (a *attempt) sendBackOf(ctx context.Context, kind lifecycle.FailureKind, res procrun.Result) sendBack {
	of := a.p.OnFailureOf(a.stage)
	exited := res.Err == nil && res.Signal == "" && !res.TimedOut && !res.Canceled && !res.Killed && res.ExitCode != 0
	if a.stage == "" || of.BackTo == "" || kind != lifecycle.FailFinal || !exited {
		return sendBack{}
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	got, n, err := runstate.CountSendBack(cctx, a.e.rdb, a.req.Ref, a.token, a.stage, of.Max)
	switch {
	case err != nil:
		a.log.Warn("count the stage's send-back; the ticket fails instead", zap.Error(err))
		return sendBack{}
	case got == runstate.SentBackLost:
		return sendBack{lost: true}
	case got == runstate.SentBackUsedUp:
		return sendBack{n: n, max: of.Max, usedUp: true}
	}
	return sendBack{to: of.BackTo, n: n, max: of.Max}
}

// headline is the failure comment's first line for sb: what sending back
// replaces, or what a failure past max adds. Stage names are
// [a-z][a-z0-9-]*: nothing to escape.
func (sb sendBack) headline(prefix, stage, failed string) string {
	switch {
	case sb.to != "":
		return fmt.Sprintf("**%s**: stage %s failed; the ticket goes back to stage %s (send-back %d of %d)", prefix, stage, sb.to, sb.n, sb.max)
	case sb.usedUp:
		return fmt.Sprintf("%s; stage %s already sent the ticket back %d times (on_failure max %d)", failed, stage, sb.n, sb.max)
	}
	return failed
}

// persistKind is the failure kind the persist command is told: a ticket
// sent back runs on, as after a retry.
func (sb sendBack) persistKind(kind lifecycle.FailureKind) lifecycle.FailureKind {
	if sb.to != "" {
		return lifecycle.FailRetry
	}
	return kind
}

// sentBack sends the ticket whose stage failed back to sb.to: the failed
// stage's result kept for sb.to (its result file, or when it wrote none
// the redacted tail of its output as the summary, bounded as a result
// file's), the comment posted (headline, result, duration, notes; not the
// output, which the stage gets), then the ticket handed to sb.to as a
// stage's success hands it to the next (enqueueStage). A run that lost
// the ticket on the way writes nothing more.
func (a *attempt) sentBack(wctx context.Context, t *platforms.Ticket, res procrun.Result, sb sendBack, headline string, notes []string) {
	e, p, req, log := a.e, a.p, a.req, a.log
	kept := a.result
	if kept.Empty() {
		kept = outputResult(res)
	}
	kept, _ = redactResult(p.Redact, kept)
	result, _ := json.Marshal(kept) // strings and a list of them: cannot fail
	switch ok, err := runstate.PutStageResult(wctx, e.rdb, req.Ref, a.token, runstate.StageResult{Stage: a.stage, For: sb.to, Result: result}); {
	case err != nil:
		log.Warn("keep the failed stage's output for the stage it goes back to; that stage runs without it", zap.Error(err))
	case !ok:
		log.Warn("run lost its ownership after its stage failed; no label written")
		return
	}
	limit := platforms.CommentLimit(p.Tracker)
	body := lifecycle.TruncateRunes(outcomeHead(headline, e.cfg.Instance, res, notes)+
		fmt.Sprintf("\nStage %s gets this stage's result or the tail of its output as `%s`.\n", sb.to, PreviousResultEnv), limit)
	if err := a.postComment(wctx, body, ""); errors.Is(err, errLostRun) {
		log.Warn("run lost its ownership before the send-back comment", zap.Error(err))
		return
	} else if err != nil {
		log.Error("post the send-back comment; the ticket goes back", zap.Error(err))
	}
	a.enqueueStage(wctx, t, sb.to, "sent back",
		fmt.Sprintf("stage %s failed (%s); back to stage %s, send-back %d of %d", a.stage, p.Redact.String(res.Describe()), sb.to, sb.n, sb.max))
}

// outputResult is a failed run's output tail as a result: the summary is
// the tail's last maxSummaryRunes characters (outputTail: redacted as
// written, control characters stripped).
func outputResult(res procrun.Result) Result {
	tail := outputTail(res)
	return Result{Summary: dropRunes(tail, utf8.RuneCountInString(tail)-maxSummaryRunes)}
}
