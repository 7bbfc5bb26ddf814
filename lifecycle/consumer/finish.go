package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/nofollow"
	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/pkg/redact"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// postComment posts body on ref, fenced, retrying transient errors within
// its own deadline (lifecycle.CommentTimeout, or the attempt's commentBudget) so the caller's following transition
// keeps its budget. A tracker that refuses body for good
// (platforms.ErrRejected: too long, or anything else a 4xx says) gets short
// instead, once; the caller moves the ticket either way.
func (a *attempt) postComment(ctx context.Context, body, short string) error {
	p, ref, fence, log := a.p, a.req.Ref, a.fence, a.log
	body, short = lifecycle.SafeComment(p.Redact, body), lifecycle.SafeComment(p.Redact, short)
	budget := lifecycle.CommentTimeout
	if a.commentBudget > 0 {
		budget = a.commentBudget
	}
	cctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	post := func(b string) error {
		return retryTransient(cctx, func() error {
			if err := fence(cctx); err != nil {
				return err
			}
			return p.Tracker.Comment(trackerhttp.WithFence(cctx, fence), ref, b)
		})
	}
	err := post(body)
	if errors.Is(err, platforms.ErrRejected) && short != "" && short != body {
		log.Warn("tracker refused the comment; posting a short one without the output", zap.Error(err))
		err = post(short)
	}
	return err
}

// outcomeComment is a failed attempt's comment: headline, result, duration,
// instance, notes, and the output's tail, at most limit characters (the
// tracker's comment limit). The tail is cut first, then sits in a code
// fence longer than any backtick run left inside it, so pipeline output can
// never break out of the block, and a tail full of backticks cannot push the
// comment past the limit through its fence. Control characters other than
// newline and tab are stripped: trackers refuse or mangle them; @mentions
// are broken and no line is a command (platforms.NoMentions,
// NoCommandLines), before the cut, so the comment stays within limit.
func outcomeComment(headline, instance string, res procrun.Result, notes []string, limit int) string {
	head := outcomeHead(headline, instance, res, notes)
	tail := platforms.NoCommandLines(platforms.NoMentions(outputTail(res)))
	if tail == "" {
		return lifecycle.TruncateRunes(head+"\n(no output)\n", limit)
	}
	// First cut as if the fence were the shortest; then the fence the kept
	// tail needs may cost more, cut by that much more, and so on: the tail
	// shrinks each round and its fence never grows.
	tail = dropRunes(tail, utf8.RuneCountInString(tail)-max(limit-utf8.RuneCountInString(head)-40, 0))
	for tail != "" {
		fence := strings.Repeat("`", max(3, longestRun(tail, '`')+1))
		body := fmt.Sprintf("%s\nLast %d bytes of output:\n\n%s\n%s\n%s\n", head, len(tail), fence, tail, fence)
		over := utf8.RuneCountInString(body) - limit
		if over <= 0 {
			return body
		}
		tail = dropRunes(tail, over)
	}
	return lifecycle.TruncateRunes(head+"\n(output omitted: too long for the tracker's comment limit)\n", limit)
}

// outputTail is the run's output tail (already redacted as it was
// written: redactOutput) as valid UTF-8 text without control characters
// other than newline and tab, trailing newlines cut.
func outputTail(res procrun.Result) string {
	return strings.TrimRight(lifecycle.StripControl(strings.ToValidUTF8(string(res.Tail), "\uFFFD")), "\n")
}

// shortOutcomeComment is outcomeComment without the output, for a tracker
// that refused the full comment.
func shortOutcomeComment(headline, instance string, res procrun.Result, notes []string, limit int) string {
	return lifecycle.TruncateRunes(outcomeHead(headline, instance, res, notes)+"\n(output omitted: the tracker refused the full comment)\n", limit)
}

func outcomeHead(headline, instance string, res procrun.Result, notes []string) string {
	var b strings.Builder
	b.WriteString(lifecycle.StripControl(headline) + "\n\n")
	// The result's description (git's stderr on a failed Prepare) and the
	// notes (the save's error, the result file's warnings) carry text the
	// pipeline chose: no mention in them notifies anyone.
	fmt.Fprintf(&b, "- result: %s\n", platforms.NoMentions(lifecycle.StripControl(res.Describe())))
	fmt.Fprintf(&b, "- duration: %s\n", res.Duration.Round(time.Millisecond))
	fmt.Fprintf(&b, "- instance: %s\n", instance)
	for _, n := range notes {
		fmt.Fprintf(&b, "- %s\n", platforms.NoMentions(lifecycle.StripControl(n)))
	}
	return b.String()
}

// dropRunes removes the first n runes of s (none when n <= 0).
func dropRunes(s string, n int) string {
	if n <= 0 {
		return s
	}
	for i := range s {
		if n == 0 {
			return s[i:]
		}
		n--
	}
	return ""
}

func longestRun(s string, c byte) int {
	best, cur := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			cur++
			best = max(best, cur)
		} else {
			cur = 0
		}
	}
	return best
}

// doneComment is the Done comment of a successful run, posted before the
// Done label: the work branch it pushed and the pipeline's result (summary,
// links such as the pull request it opened), redacted and cut to the
// tracker's limit, and short, the same without the result, for a tracker
// that refuses it. A run with nothing of either to show posts none ("").
// A comment that fails for good is logged and the transition goes ahead:
// the result is a courtesy, the label is the state.
func (a *attempt) doneComment(res procrun.Result) (body, short string) {
	e, p := a.e, a.p
	rendered := renderResult(p.Redact, p.Platform, a.result)
	if rendered == "" && len(a.workNotes) == 0 && len(a.resultNotes) == 0 {
		return "", ""
	}
	what := "pipeline"
	if a.stage != "" {
		what = "stage " + a.stage // [a-z][a-z0-9-]*: nothing to escape
	}
	body = fmt.Sprintf("**%s**: %s succeeded (attempt %d)\n\n- duration: %s\n- instance: %s\n",
		e.cfg.Labels.Prefix, what, a.req.Attempt, res.Duration.Round(time.Millisecond), e.cfg.Instance)
	body += noteLines(append(append([]string(nil), a.workNotes...), a.resultNotes...))
	short = lifecycle.TruncateRunes(body, platforms.CommentLimit(p.Tracker))
	if rendered != "" {
		body += "\n" + rendered
	}
	body = lifecycle.TruncateRunes(body, platforms.CommentLimit(p.Tracker))
	return lifecycle.SafeComment(p.Redact, body), lifecycle.SafeComment(p.Redact, short)
}

// failed handles a failed attempt while the run still owns the ticket: it
// runs the project's persist command, saves the work branch as a [wip]
// commit (workbranch.go), posts the failure comment, then
// retries the ticket after its backoff (InProgress → Enqueued, the next
// attempt in the delayed set), escalates it (Failed, plus the escalation
// label and mentions), or fails it.
func (a *attempt) failed(ctx context.Context, t *platforms.Ticket, res procrun.Result) {
	e, p, req, hb, log := a.e, a.p, a.req, a.hb, a.log
	kind, retryable := p.Pipeline.Classify(res, req.Attempt)
	sb := a.sendBackOf(ctx, kind, res)
	if sb.lost {
		log.Warn("run lost its ownership after its stage failed; no label written")
		a.releaseRun(false)
		return
	}
	var delay time.Duration
	if kind == lifecycle.FailRetry {
		delay = p.Pipeline.Retry.Backoff.Delay(req.Attempt, e.cfg.Rand())
	}
	// The result's description carries git's stderr when the work branch
	// could not be prepared, which may quote the secrets or paths of the
	// pipeline: it reaches the [wip] commit, the audit stream, the status
	// page and the daemon's log redacted.
	reason := p.Redact.String(res.Describe())
	headline, limit := failureHeadline(e.cfg.Labels.Prefix, p, kind, retryable, req.Attempt, delay), platforms.CommentLimit(p.Tracker)
	headline = sb.headline(e.cfg.Labels.Prefix, a.stage, headline)
	if r := renderResult(p.Redact, p.Platform, a.result); r != "" {
		headline += "\n\n" + r
	}
	// A failure that ends the ticket is recorded before the persist
	// command and the save, with the comment it has so far (headline,
	// result, output), and again with the full comment after them: from
	// here on its outcome is written from the record (outcome.go), also
	// when the replica dies during a long save. A retry is not: a lost one
	// is reverted and retried by StaleJobDetector.
	var o runstate.Outcome
	recorded := false
	if kind != lifecycle.FailRetry && sb.to == "" {
		escalate := ""
		if kind == lifecycle.FailEscalate {
			escalate = p.Pipeline.Escalate.Label
		}
		early := append([]string(nil), a.resultNotes...)
		o = a.newOutcome(lifecycle.Failed, kind.Outcome(), reason, lifecycle.SafeComment(p.Redact, outcomeComment(headline, e.cfg.Instance, res, early, limit)),
			lifecycle.SafeComment(p.Redact, shortOutcomeComment(headline, e.cfg.Instance, res, early, limit)), escalate)
		recorded = a.recordOutcome(o)
	}
	notes := a.persist(ctx, t, sb.persistKind(kind))
	notes = append(notes, a.saveWork(ctx, lifecycle.WorkDir(e.cfg.WorkDir, req.Ref), false, reason, 0)...)
	notes = append(notes, a.resultNotes...)
	if lost := hb.lostErr(); lost != nil {
		log.Warn("run lost its ownership while persisting; no label written by this run", zap.Bool("outcomeRecorded", recorded), zap.Error(lost))
		a.releaseRun(false)
		return
	}
	// The outcome must be written even while shutting down.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.WriteTimeout)
	defer cancel()
	if sb.to != "" {
		a.sentBack(wctx, t, res, sb, headline, notes)
		return
	}
	body := outcomeComment(headline, e.cfg.Instance, res, notes, limit)
	short := shortOutcomeComment(headline, e.cfg.Instance, res, notes, limit)
	if kind != lifecycle.FailRetry {
		o.Body, o.Short = lifecycle.SafeComment(p.Redact, body), lifecycle.SafeComment(p.Redact, short)
		o.Branch, o.Commit = a.branch, a.pushed
		if a.recordOutcome(o) {
			recorded = true
		}
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
	next := lifecycle.NextAttempt(req.Attempt)
	why := fmt.Sprintf("%s; attempt %d in %s", reason, next, delay)
	if err := retryTransient(ctx, func() error {
		_, err := a.moveAs(ctx, nil, lifecycle.InProgress, lifecycle.Enqueued, lifecycle.FailRetry.Outcome(), why)
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
	nreq := lifecycle.PipelineRequest{ID: redislock.NewToken(), Ref: req.Ref, Source: lifecycle.SourceRetry, Attempt: next,
		EnqueuedAt: due.UTC(), Priority: req.Priority, Stage: a.stage, Pool: a.p.PoolFor(a.stage)}
	if err := e.queue.Delay(ctx, nreq.Encode(), delay); err != nil {
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
			if _, err = lifecycle.AddLabel(trackerhttp.WithFence(ctx, fence), p.Tracker, e.cfg.Labels, t, label); !errors.Is(err, platforms.ErrPreconditionFailed) {
				return err
			}
		}
		return err
	})
}

// failureHeadline is the first line of the failure comment: what happened
// and what happens next. "attempt k of n" appears only when another attempt
// follows; a failure that ends the ticket says why nothing retries it.
func failureHeadline(prefix string, p *lifecycle.Project, kind lifecycle.FailureKind, retryable bool, attempt int, delay time.Duration) string {
	h := fmt.Sprintf("**%s**: pipeline failed", prefix)
	switch {
	case kind == lifecycle.FailRetry:
		return fmt.Sprintf("%s (attempt %d of %d), retrying in %s", h, attempt, p.Pipeline.Attempts().Limit(), roundDelay(delay))
	case kind == lifecycle.FailEscalate:
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

// A run's outcome is recorded in Redis (runstate.Outcome) the moment its
// pipeline ends, before any tracker call, and again with the work branch's
// commit once that is pushed; the final write (comment, escalation label,
// Done or Failed) is made from the record. A tracker that does not answer
// then costs the run nothing: the run hands the record over (releases its
// lock, the record stays and holds the ticket) and OutcomeFinisher writes it
// when the tracker answers again, on whichever replica leads housekeeping,
// also after this one was killed. The pipeline does not run a second time
// for it: runstate.Take refuses the ticket while its outcome waits, and
// StaleJobDetector leaves such a ticket to the finisher. That holds while
// Redis keeps the record: the run confirms it (re-recording it after Redis
// lost its keys) before it hands over, but a record lost after the
// hand-over (a FLUSHALL, a failover to a replica without it) is gone, and
// its ticket is reverted and run again.

// newOutcome is the record of this attempt's outcome: the ticket moves to
// to with the comment body (short when the tracker refuses body).
func (a *attempt) newOutcome(to lifecycle.State, outcome, reason, body, short, escalate string) runstate.Outcome {
	return runstate.Outcome{Ref: a.req.Ref, Token: a.token, Instance: a.e.cfg.Instance, RequestID: a.req.ID,
		Source: a.req.Source, Attempt: a.req.Attempt, To: to.String(), Outcome: outcome, Reason: reason,
		Body: body, Short: short, EscalateLabel: escalate, Branch: a.branch, Commit: a.pushed,
		Started: a.started.UTC(), Recorded: a.e.cfg.Clock().UTC(), EnqueuedAt: a.req.EnqueuedAt, ClaimedAt: a.req.ClaimedAt}
}

// recordOutcome writes o under the run's lock and reports whether it is
// recorded. A run that lost its lock records nothing (its successor owns
// the ticket); a Redis that cannot be written leaves the run to write its
// outcome directly, as it would without a record.
func (a *attempt) recordOutcome(o runstate.Outcome) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ok, err := runstate.PutOutcome(ctx, a.e.rdb, a.token, o)
	if err != nil {
		a.log.Warn("record the run's outcome (written directly, without a record)", zap.Error(err))
		return false
	}
	if !ok {
		a.log.Warn("record the run's outcome: the run no longer holds the ticket")
	}
	return ok
}

// finishRun writes o, the run's outcome (recorded false: no record of it
// could be made so far), and ends the run: released as terminal once
// written; or handed over, its record left for OutcomeFinisher, when the
// tracker did not take the write and the record is confirmed (handOver).
func (a *attempt) finishRun(ctx context.Context, t *platforms.Ticket, o runstate.Outcome, recorded bool) {
	log := a.log
	err := a.writeOutcome(ctx, t, &o, a.token, recorded, recorded)
	switch {
	case err == nil:
		// Also a first record the second could not replace.
		a.dropOutcome(a.token)
		a.releaseRun(true)
	case errors.Is(err, errStateChanged) || errors.Is(err, lifecycle.ErrIllegalTransition):
		log.Error("transition to "+o.To+": the ticket left in-progress; nothing more to write", zap.Error(err))
		a.dropOutcome(a.token)
		a.releaseRun(false)
	default:
		a.handOver(o, err)
	}
}

// handOver ends a run whose final write failed with werr: it confirms the
// outcome's record (runstate.KeepOutcome, which re-takes the run lock when
// Redis lost it) and only then releases the run, the record holding the
// ticket for OutcomeFinisher. A record that cannot be confirmed is never
// taken for one: the run keeps its lock until it expires and
// StaleJobDetector takes over; a ticket another run owns is left to it.
func (a *attempt) handOver(o runstate.Outcome, werr error) {
	log := a.log.With(zap.NamedError("writeError", werr))
	ctx, cancel := context.WithTimeout(context.Background(), max(a.e.cfg.HeartbeatTTL, 5*time.Second))
	defer cancel()
	var kept runstate.Kept
	err := retryTransient(ctx, func() (err error) {
		kept, err = runstate.KeepOutcome(ctx, a.e.rdb, o, a.e.cfg.HeartbeatTTL)
		return err
	})
	switch {
	case err != nil:
		log.Error("transition to "+o.To+" not written, and its record could not be confirmed (the heartbeat expires and StaleJobDetector takes over)",
			zap.Error(err))
	case kept == runstate.NotKept:
		log.Warn("transition to " + o.To + " not written; the run no longer holds the ticket, which its successor owns")
		a.releaseRun(false)
	case kept == runstate.Retaken && a.killUnconfirmed:
		// Redis lost the lock while it could not be read and the pipeline
		// was killed meanwhile: its run guard killed it for the lost lock,
		// so this is a lost run, run again after the restart grace.
		log.Warn("the run's lock was lost while Redis could not be read and its pipeline was killed by a signal: a lost run, not an outcome; released to be run again")
		a.dropOutcome(a.token)
		a.releaseRun(false)
	default:
		log.Warn("transition to "+o.To+" not written; the outcome is recorded and is written from the record when the tracker answers (housekeeping's OutcomeWriter), never by running the pipeline again",
			zap.Bool("lockRetaken", kept == runstate.Retaken))
		// The record holds the ticket: no run can take it, no repair reverts it.
		a.releaseRun(false)
	}
}

func (a *attempt) dropOutcome(holder string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := runstate.DropOutcome(ctx, a.e.rdb, a.req.Ref, holder); err != nil {
		a.log.Warn("drop the written outcome's record (it is written again, idempotently)", zap.Error(err))
	}
}

// writeOutcome makes o's final write, fenced by a.fence: the comment unless
// posted (then, when recorded says a record exists, marked posted in the
// record held by holder, so no finisher posts it twice), the escalation
// label, and InProgress → o.To. t is a snapshot of the ticket (nil: read
// it). With strict, a comment the tracker did not take for a transient
// reason fails the write, which is made again from the record; without it
// the transition goes ahead, as the comment is a courtesy. A ticket that
// already shows o.To (a write whose answer was lost) is written.
func (a *attempt) writeOutcome(ctx context.Context, t *platforms.Ticket, o *runstate.Outcome, holder string, recorded, strict bool) error {
	e, log := a.e, a.log
	to, err := lifecycle.ParseState(o.To)
	if err != nil || !to.Terminal() {
		return fmt.Errorf("%w: outcome to %q", lifecycle.ErrIllegalTransition, o.To)
	}
	if o.Body != "" && !o.CommentPosted {
		err := a.postComment(ctx, o.Body, o.Short)
		switch {
		case errors.Is(err, errLostRun):
			return err
		case err != nil && strict && !errors.Is(err, platforms.ErrRejected):
			if ctx.Err() == nil && !errors.Is(err, errFenceUnread) {
				// The tracker failed the comment itself, not the write's
				// deadline, a shutdown or Redis.
				return fmt.Errorf("post the %s comment: %w: %w", o.To, errCommentFailed, err)
			}
			return fmt.Errorf("post the %s comment: %w", o.To, err)
		case err != nil:
			log.Error("post the "+o.To+" comment; the transition goes ahead", zap.Error(err))
		default:
			o.CommentPosted = true
		}
		if o.CommentPosted && recorded {
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if _, err := runstate.PutOutcome(pctx, e.rdb, holder, *o); err != nil {
				log.Warn("mark the comment posted in the outcome's record", zap.Error(err))
			}
			cancel()
		}
	}
	if o.EscalateLabel != "" {
		if err := a.addLabel(ctx, o.EscalateLabel); err != nil {
			log.Error("add escalation label", zap.String("label", o.EscalateLabel), zap.Error(err))
		}
	}
	err = retryTransient(ctx, func() error {
		_, err := a.moveAs(ctx, t, lifecycle.InProgress, to, o.Outcome, o.Reason)
		t = nil // moveAs re-reads after a failure; the snapshot is spent
		return err
	})
	if errors.Is(err, errStateChanged) {
		if cur, gerr := a.p.Tracker.Get(ctx, a.req.Ref); gerr == nil && a.labels().StateOf(cur.Labels) == to {
			return nil
		}
	}
	return err
}

// errCommentFailed marks a final write that failed because the tracker did
// not take its comment for a transient reason (OutcomeFinisher counts these
// apart: Outcome.CommentTries).
var errCommentFailed = errors.New("comment not taken")

// ResultFileEnv names the file a pipeline may write its result to. The
// file's name starts with ".agentsmith-" so the work branch never commits
// it (pkg/gitws excludes /.agentsmith-*).
const (
	ResultFileEnv  = "AGENTSMITH_RESULT_FILE"
	resultFileName = ".agentsmith-result.json"
)

// Bounds on a pipeline's result: it is the pipeline's output, hostile like
// the rest of it, and it goes into a comment every platform caps.
const (
	MaxResultBytes   = 64 << 10
	maxSummaryRunes  = 4000
	maxResultLinks   = 20
	maxLinkTitleRune = 200
	maxLinkURLBytes  = 2000
)

// ResultFile is where the pipeline of the ticket in workDir may write its
// result ($AGENTSMITH_RESULT_FILE).
func ResultFile(workDir string) string { return filepath.Join(workDir, resultFileName) }

// Result is what a pipeline reports about its run: a summary and links (the
// pull request it opened), shown in the Done and Failed comments.
type Result struct {
	Summary string `json:"summary"`
	Links   []Link `json:"links"`
}

// Link is one link of a Result.
type Link struct {
	Title string `json:"title"`
	URL   string `json:"url"`
}

// Empty reports whether r has nothing to show.
func (r Result) Empty() bool { return strings.TrimSpace(r.Summary) == "" && len(r.Links) == 0 }

// ReadResult reads the result file at path, written by a run as uid owner
// (-1: any owner). No file is no result and no warning; anything wrong with
// it (too large, not JSON, a link that is not http(s)) is a warning for the
// comment, never an error: a result is a courtesy, and a bad one must not
// fail a transition. A file that is not a regular file with one link owned
// by owner is refused unread (nofollow.OpenRegular) with a warning saying
// why: a hard or symbolic link to a file only the daemon may read must not
// reach a comment.
func ReadResult(path string, owner int) (Result, []string) {
	r, warn, _ := readResult(path, owner)
	return r, warn
}

// readResult is ReadResult, and the refusal (wrapping nofollow.ErrRefused)
// when the file was refused.
func readResult(path string, owner int) (Result, []string, error) {
	f, err := nofollow.OpenRegular(filepath.Dir(path), filepath.Base(path), owner)
	if errors.Is(err, fs.ErrNotExist) {
		return Result{}, nil, nil
	}
	if errors.Is(err, nofollow.ErrRefused) {
		return Result{}, []string{"result file refused: " + refusal(err)}, err
	}
	if err != nil {
		return Result{}, []string{"result file: cannot be read"}, nil
	}
	defer f.Close()
	r, warn := parseResult(f)
	return r, warn, nil
}

// refusal is the reason of a nofollow.ErrRefused error, without the path
// (the work dir's, of no use in a comment).
func refusal(err error) string {
	var re *nofollow.RefusedError
	if errors.As(err, &re) {
		return re.Reason
	}
	return err.Error()
}

// parseResult reads a result file from f, bounded by MaxResultBytes.
func parseResult(f io.Reader) (Result, []string) {
	b, err := io.ReadAll(io.LimitReader(f, MaxResultBytes+1))
	if err != nil {
		return Result{}, []string{"result file: cannot be read"}
	}
	if len(b) > MaxResultBytes {
		return Result{}, []string{fmt.Sprintf("result file: ignored, larger than %d bytes", MaxResultBytes)}
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return Result{}, []string{"result file: ignored, not valid JSON of the form {\"summary\": ..., \"links\": [{\"title\": ..., \"url\": ...}]}"}
	}
	var warn []string
	r.Summary = strings.TrimSpace(lifecycle.StripControl(strings.ToValidUTF8(r.Summary, "\uFFFD")))
	if utf8.RuneCountInString(r.Summary) > maxSummaryRunes {
		r.Summary = lifecycle.TruncateRunes(r.Summary, maxSummaryRunes) + "…"
		warn = append(warn, fmt.Sprintf("result file: summary cut to %d characters", maxSummaryRunes))
	}
	links, dropped := r.Links[:0], 0
	for _, l := range r.Links {
		u, ok := httpURL(l.URL)
		if !ok || len(links) == maxResultLinks {
			dropped++
			continue
		}
		title := strings.TrimSpace(strings.ReplaceAll(lifecycle.StripControl(strings.ToValidUTF8(l.Title, "\uFFFD")), "\n", " "))
		title = lifecycle.TruncateRunes(title, maxLinkTitleRune)
		if title == "" {
			title = u
		}
		links = append(links, Link{Title: title, URL: u})
	}
	r.Links = links
	if dropped > 0 {
		warn = append(warn, fmt.Sprintf("result file: %d link(s) left out (only http(s) URLs, at most %d)", dropped, maxResultLinks))
	}
	return r, warn
}

// httpURL returns raw normalised when it is an absolute http(s) URL with a
// host: no javascript:, data: or relative link reaches a comment.
func httpURL(raw string) (string, bool) {
	if len(raw) > maxLinkURLBytes || strings.ContainsAny(raw, " \t\r\n\x00<>\"`") {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return "", false
	}
	// Parentheses would end a Markdown link target early.
	return strings.NewReplacer("(", "%28", ")", "%29").Replace(u.String()), true
}

// renderResult is r as comment text for platform, red's secrets replaced
// before any escaping (escapeFor), in the platform's comment markup
// (platforms.Descriptor.CommentMarkup): Markdown, with every character
// Markdown could read as markup escaped and @mentions broken, on GitHub,
// GitLab and Azure DevOps (which takes the daemon's comments as Markdown);
// plain text on Jira, whose tracker converts the comment to wiki markup or
// ADF and escapes it there (platforms/jira/adf.go), with Jira's own
// mention and code-fence forms broken here.
func renderResult(red *redact.Redactor, platform string, r Result) string {
	if r.Empty() {
		return ""
	}
	esc := func(s string) string { return escapeFor(red, platform, s) }
	jira := markupOf(platform) == platforms.MarkupJiraWiki
	var b strings.Builder
	if r.Summary != "" {
		b.WriteString("**Summary**\n\n")
		for _, line := range strings.Split(r.Summary, "\n") {
			b.WriteString(platforms.NoCommandLines(esc(line)) + "\n")
		}
	}
	if len(r.Links) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("**Links**\n\n")
		for _, l := range r.Links {
			if jira {
				fmt.Fprintf(&b, "- %s: %s\n", esc(l.Title), l.URL)
			} else {
				fmt.Fprintf(&b, "- [%s](%s)\n", esc(l.Title), l.URL)
			}
		}
	}
	return b.String()
}

// escapeFor is s, text from a pipeline, as comment text for platform: red's
// secrets replaced, then escaped for the platform's markup (see
// renderResult). The order matters: escaping changes a secret's bytes
// ("ghp_x" becomes "ghp\_x"), which no later redaction recognises but the
// tracker renders as the secret again. Every pipeline text a comment shows
// escaped goes through here, so none is escaped unredacted, and none
// becomes a link (breakAutolinks): a link in the daemon's comment is one
// the daemon placed, such as a result file's links (renderResult).
func escapeFor(red *redact.Redactor, platform, s string) string {
	s = red.String(s)
	if markupOf(platform) == platforms.MarkupJiraWiki {
		return breakAutolinks(jiraEscape(s))
	}
	return breakAutolinks(markdownEscape(s))
}

// markupOf is how platform's tracker reads comment text, from its
// Descriptor: Markdown for a platform not registered, the markup that
// escapes the most.
func markupOf(platform string) platforms.Markup {
	d, _ := platforms.Lookup(platform)
	return d.CommentMarkup
}

// breakAutolinks puts a zero-width space after the ":" of every "://" and
// after a "www" that starts a word before ".", so no URL in pipeline text
// becomes a link posted in the daemon's name (a login page under the bot's
// identity), while the text reads as written. Each tracker links bare URLs
// in comment text on its own:
//   - GitHub: the GFM autolink extension links "www." and "http://",
//     "https://" at a word's start, and e-mail addresses (which "@"
//     breaking already defeats)
//     (https://github.github.com/gfm/#autolinks-extension-). Backslash
//     escapes are no defence: github.com links again after parsing
//     (micromark-extension-gfm-autolink-literal's notes on github.com's two
//     algorithms); text between ":" and "//" is, as in the common
//     "http://<span></span>example.com" workaround.
//   - GitLab: "almost any URL" of any scheme is linked
//     (https://docs.gitlab.com/ee/user/markdown.html#url-auto-linking), and
//     backslash escapes ("http\:\/\/localhost") do not stop it
//     (https://gitlab.com/gitlab-org/gitlab/-/work_items/339017): only a
//     character inside "scheme://" does.
//   - Azure DevOps: its Markdown is CommonMark with GitHub's extensions
//     (https://learn.microsoft.com/azure/devops/project/wiki/markdown-guidance),
//     so GitHub's rules are assumed.
//   - Jira: Data Center's renderer links bare URLs in comment text even
//     with wiki-style rendering off (jenkinsci/jira-plugin#43, JRA-5981);
//     Cloud's ADF text nodes get no link mark from this daemon
//     (platforms/jira/adf.go; LeGambiArt/wtmcp#124 reports a bare URL in
//     one is not clickable), and the break keeps both inert.
//
// Inline code would stop the link too, but shows the text as code and
// needs its own backtick escaping; a zero-width space is invisible.
func breakAutolinks(s string) string {
	if !strings.Contains(s, "://") && !strings.Contains(strings.ToLower(s), "www.") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(s[i])
		switch {
		case s[i] == ':' && strings.HasPrefix(s[i+1:], "//"):
			b.WriteString("\u200b")
		case i >= 2 && strings.EqualFold(s[i-2:i+1], "www") && i+1 < len(s) && s[i+1] == '.' && !wordByteAt(s, i-3):
			b.WriteString("\u200b")
		}
	}
	return b.String()
}

// wordByteAt reports whether s holds at byte i a byte that continues a
// word (an ASCII letter or digit, or any byte of a non-ASCII rune), so
// "awww.x" is not broken but " www.x" and "(www.x" are.
func wordByteAt(s string, i int) bool {
	return alnumAt(s, i) || i >= 0 && i < len(s) && s[i] >= 0x80
}

// markdownEscape backslash-escapes the ASCII punctuation of s that could
// start markup where it stands (CommonMark 0.31 and GitHub's extensions),
// and nothing else, so a path or a branch name reads as written in the
// tracker and in a plain-text notification e-mail ("CHANGELOG.md",
// "agent-smith/demo-webshop-2"); it puts a zero-width space after "@" so
// no summary mentions (notifies) anyone, and after "#", "!", "%" and "$"
// before a letter, digit or quote so no summary references another issue. Escaped everywhere: "\\", "`",
// "*", "[", "]", "<" (no HTML, no autolink), "&" (no entity can spell a
// "@" or a "<"), "|" and "~" (tables, strikethrough), and "_" unless it
// stands between two letters or digits, where it opens no emphasis.
// Escaped as the first character of a line (after blanks): "#", "-", "+",
// "=", ">" (headings, lists, rules, setext underlines, quotes), and the
// "." or ")" after a leading number ("1." opens an ordered list). With
// every container's opener escaped, no later position of a line starts a
// block.
func markdownEscape(s string) string {
	var b strings.Builder
	lineStart := true // only blanks so far on this line
	digits := 0       // the digits right after this line's leading blanks
	for i, r := range s {
		atStart, number := lineStart, digits
		switch {
		case r == '\n' || r == '\r':
			lineStart, digits = true, 0
		case r == ' ' || r == '\t':
			digits = 0
		case r >= '0' && r <= '9' && (lineStart || digits > 0):
			lineStart, digits = false, digits+1
		default:
			lineStart, digits = false, 0
		}
		listNumber := number > 0 && (r == '.' || r == ')') && (i+1 == len(s) || strings.IndexByte(" \t\r\n", s[i+1]) >= 0)
		switch {
		case r == '@':
			b.WriteString("@\u200b")
			continue
		case r < 0x80 && strings.ContainsRune("#!%$", r) && (alnumAt(s, i+1) || i+1 < len(s) && s[i+1] == '"'):
			// A reference (#12, group/project#3, !4, %"milestone", $5)
			// links the comment to another issue or merge request and
			// leaves a note there in the daemon's name: a zero-width
			// space after the sigil keeps the text and drops the link.
			b.WriteRune(r)
			b.WriteString("\u200b")
			continue
		case r < 0x80 && strings.ContainsRune("\\`*[]<&|~", r),
			r == '_' && !(alnumAt(s, i-1) && alnumAt(s, i+1)),
			atStart && strings.ContainsRune("#-+=>", r),
			listNumber:
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// alnumAt reports whether s holds an ASCII letter or digit at byte i.
func alnumAt(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return false
	}
	c := s[i]
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// jiraEscape breaks the two forms the Jira tracker passes through as
// written, [~user] mentions and ``` code fences, and @mentions, which Jira
// does not resolve in API text but bots and other trackers' mirrors may.
func jiraEscape(s string) string {
	return platforms.NoMentions(strings.NewReplacer("[~", "[\u200b~", "```", "`\u200b``").Replace(s))
}

// removeStale removes a file an earlier attempt's pipeline left (its result
// must not be shown as this attempt's).
func removeStale(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the last attempt's %s: %w", filepath.Base(path), err)
	}
	return nil
}

// noteLines is notes as the comment's list items, one a line.
func noteLines(notes []string) string {
	var b strings.Builder
	for _, n := range notes {
		fmt.Fprintf(&b, "- %s\n", lifecycle.StripControl(n))
	}
	return b.String()
}

// The environment a stage's run gets besides the pipeline's.
const (
	// StageEnv names the stage the run is ("plan").
	StageEnv = "AGENTSMITH_STAGE"
	// ReviewEnv holds the reviewer's text of the approval gate's rejection
	// that sent the ticket back to this stage (bounded by lifecycle/gate);
	// unset otherwise.
	ReviewEnv = "AGENTSMITH_REVIEW"
	// PreviousResultEnv holds the result the previous stage's pipeline
	// wrote to $AGENTSMITH_RESULT_FILE, as JSON {summary, links}, bounded
	// as ReadResult bounds it; unset in the first stage or when the
	// previous stage wrote none that is still kept (keys.StageResultTTL).
	// After a later stage failed and sent the ticket back (on_failure), it
	// holds that stage's result, or when it wrote none the tail of its
	// output as the summary (sentBack).
	PreviousResultEnv = "AGENTSMITH_PREVIOUS_RESULT"
)

// stageOf is the stage a request for ticket labels runs in project p: the
// stage the ticket's labels show (the tracker is the truth), else the
// request's, else the first; "" for a project without stages.
func stageOf(p *lifecycle.Project, labels lifecycle.Labels, ticketLabels []string, req lifecycle.PipelineRequest) string {
	names := p.StageNames()
	if len(names) == 0 {
		return ""
	}
	if s := labels.StageOf(ticketLabels); s != "" {
		return s
	}
	if slices.Contains(names, req.Stage) {
		return req.Stage
	}
	return names[0]
}

// nextStage is the stage after the attempt's, or "" after the last (and
// for a project without stages).
func (a *attempt) nextStage() string {
	if a.stage == "" {
		return ""
	}
	next, _ := a.labels().NextStage(a.stage)
	return next
}

// stageEnv is the stage's part of the run's environment: its name and the
// last stage result kept, when it is for this stage: the previous stage's
// after it succeeded, or a later stage's that failed and sent the ticket
// back here (on_failure). A re-run of the first stage sees only the
// latter.
func (a *attempt) stageEnv(ctx context.Context) []string {
	if a.stage == "" {
		return nil
	}
	env := []string{StageEnv + "=" + a.stage}
	switch review, err := runstate.Review(ctx, a.e.rdb, a.req.Ref); {
	case err != nil:
		a.log.Warn("read the review of the stage's rejection; the stage runs without it", zap.Error(err))
	case review != "":
		env = append(env, ReviewEnv+"="+review)
	}
	names := a.p.StageNames()
	i := slices.Index(names, a.stage)
	if i < 0 {
		return env
	}
	r, ok, err := runstate.LastStageResult(ctx, a.e.rdb, a.req.Ref)
	kept := slices.Index(names, r.Stage) // the kept result's stage, -1 for none
	switch {
	case err != nil:
		a.log.Warn("read the previous stage's result; the stage runs without it", zap.Error(err))
	case !ok || len(r.Result) == 0:
	case slices.Index(names, r.For) == i, len(r.For) == 0 && i > 0 && kept == i-1:
		env = append(env, PreviousResultEnv+"="+string(r.Result))
	}
	return env
}

// stageSucceeded moves a ticket whose stage succeeded to the next stage:
// the work branch saved, the stage's result kept for the next stage
// (fenced by the run's lock), the result's comment posted, then one label
// write InProgress(stage) → Enqueued(next), the attempt count started over
// and the next stage's request pushed, as a retry hands a ticket back. A
// run lost on the way writes nothing more; a ticket left Enqueued without
// its request is re-pushed by the EnqueuedReconciler, at the stage its
// label shows.
func (a *attempt) stageSucceeded(ctx, wctx context.Context, t *platforms.Ticket, res procrun.Result, workDir string) {
	e, req, log := a.e, a.req, a.log
	next := a.nextStage()
	a.workNotes = a.saveWork(ctx, workDir, true, "", 0)
	if lost := a.hb.lostErr(); lost != nil {
		log.Warn("run lost its ownership after its stage succeeded; no label written", zap.Error(lost))
		a.releaseRun(false)
		return
	}
	result, _ := json.Marshal(a.result) // strings and a list of them: cannot fail
	switch ok, err := runstate.PutStageResult(wctx, e.rdb, req.Ref, a.token, runstate.StageResult{Stage: a.stage, For: next, Result: result}); {
	case err != nil:
		log.Warn("keep the stage's result for the next stage; it runs without it", zap.Error(err))
	case !ok:
		log.Warn("run lost its ownership after its stage succeeded; no label written")
		return
	}
	gated, after := a.p.ApprovalFor(next) != nil, a.p.TimerFor(next)
	var due time.Time
	body, short := a.doneComment(res)
	switch {
	case gated:
		body, short = a.reviewComment(res, body, short, next)
	case after > 0:
		due = e.cfg.Clock().Add(after).UTC()
		body, short = a.gateComment(res, body, short, fmt.Sprintf("stage %s waits for its timer gate (after %s): it starts at %s.", next, after, due.Format(time.RFC3339)))
	}
	if body != "" {
		if err := a.postComment(wctx, body, short); errors.Is(err, errLostRun) {
			log.Warn("run lost its ownership before the stage's comment", zap.Error(err))
			return
		} else if err != nil {
			log.Error("post the stage's comment; the ticket moves on", zap.Error(err))
		}
	}
	why, to := fmt.Sprintf("stage %s succeeded; stage %s next", a.stage, next), lifecycle.Enqueued
	switch {
	case gated:
		why, to = fmt.Sprintf("stage %s succeeded; stage %s awaits approval", a.stage, next), lifecycle.AwaitingApproval
	case after > 0:
		why = fmt.Sprintf("stage %s succeeded; stage %s starts at %s (timer gate, after %s)", a.stage, next, due.Format(time.RFC3339), after)
	}
	a.enqueueStage(wctx, t, next, to, "stage succeeded", why, due)
}

// enqueueStage hands the ticket, whose run of the attempt's stage ended,
// to stage: one label write InProgress(a.stage) → to(stage), the attempt
// count started over and, unless to is AwaitingApproval (parked: no
// request, run or heartbeat until the ApprovalGate decides,
// lifecycle/gate), stage's request pushed, as a retry hands a ticket back;
// with a timer gate's due (not zero) the request waits in the delayed set
// until then, holding no consumer slot. Before a park, a gate decision
// still recorded from an earlier one is dropped under the run's lock
// (runstate.ForgetGateDecision; before the write, while the ticket reads
// in-progress, so no decision on this park can be recorded yet), and the
// park (lifecycle.Park) is recorded before the run lets go of the ticket,
// which a decision waits for; before a timer's write, due is recorded
// under it (runstate.PutTimer). A ticket left Enqueued without its
// request (the replica died after the write) is re-pushed by the
// EnqueuedReconciler at the stage its label shows, no earlier than the
// recorded due.
func (a *attempt) enqueueStage(wctx context.Context, t *platforms.Ticket, stage string, to lifecycle.State, outcome, why string, due time.Time) {
	e, req, log := a.e, a.req, a.log
	if !due.IsZero() && !a.fencedBefore(wctx, "recording the timer gate", func() (bool, error) {
		return runstate.PutTimer(wctx, e.rdb, req.Ref, a.token, runstate.Timer{Stage: stage, Due: due}, e.cfg.Clock())
	}) {
		return
	}
	// A decision recorded for an earlier park is not this park's.
	if to == lifecycle.AwaitingApproval && !a.fencedBefore(wctx, "forgetting an earlier gate decision", func() (bool, error) {
		return runstate.ForgetGateDecision(wctx, e.rdb, req.Ref, a.token)
	}) {
		return
	}
	// Attempts count per stage: the count of a.stage is gone before the
	// label shows stage, so a replica dying after the write leaves the
	// repairs none to carry into stage (runstate.ResetAttempts).
	if !a.fencedBefore(wctx, "starting the attempt count over", func() (bool, error) {
		return runstate.ResetAttempts(wctx, e.rdb, req.Ref, a.token)
	}) {
		return
	}
	title := ""
	if t != nil {
		title = t.Title
	}
	if err := retryTransient(wctx, func() error {
		nt, err := a.moveStageAs(wctx, t, lifecycle.InProgress, to, stage, outcome, why)
		if nt != nil {
			title = nt.Title
		}
		t = nil // moveAs re-reads after a failure; the snapshot is spent
		return err
	}); err != nil {
		log.Error("transition to stage "+stage+" (the heartbeat expires and StaleJobDetector takes over)", zap.Error(err))
		return
	}
	// Attempts count per stage: stage's first request is attempt 1, which
	// Take would refuse as stale beside this stage's count.
	if err := runstate.StartOver(wctx, e.rdb, req.Ref); err != nil {
		log.Warn("start the attempt count over for stage "+stage, zap.Error(err))
	}
	if to == lifecycle.AwaitingApproval {
		// The gate's deadline counts from here (lifecycle/gate Expire); the
		// parked index lists the ticket on the status page. Recorded
		// before the run lets go: the gate waits for that (a decision
		// during the park finds the run's lock held), so a decision never
		// comes before the park's record.
		park := lifecycle.ParkedEntry{Ref: req.Ref, Stage: stage, Title: title, Since: e.cfg.Clock()}
		if err := lifecycle.Park(wctx, e.rdb, park); err != nil {
			log.Warn("record when the ticket was parked (the GateKeeper records it at its next cycle)", zap.Error(err))
		}
		a.releaseRun(false)
		log.Info(outcome+"; stage awaits approval", zap.String("nextStage", stage))
		return
	}
	a.releaseRun(false)
	nreq := lifecycle.PipelineRequest{ID: redislock.NewToken(), Ref: req.Ref, Source: lifecycle.SourceStage, Attempt: 1,
		EnqueuedAt: e.cfg.Clock().UTC(), ClaimedAt: req.ClaimedAt, Priority: req.Priority, Stage: stage, Pool: a.p.PoolFor(stage)}
	if !due.IsZero() {
		// As a retry's: the queue wait counts from the timer's end.
		nreq.EnqueuedAt = due
		if err := e.queue.Delay(wctx, nreq.Encode(), due.Sub(e.cfg.Clock())); err != nil {
			log.Error("delay stage "+stage+"'s request for its timer gate (EnqueuedReconciler will re-delay it)", zap.Error(err))
			return
		}
		log.Info(outcome+"; stage waits for its timer gate", zap.String("nextStage", stage), zap.Time("due", due), zap.String("newRequestId", nreq.ID))
		return
	}
	if err := e.queue.Push(wctx, nreq.Encode()); err != nil {
		log.Error("push stage "+stage+"'s request (EnqueuedReconciler will re-push)", zap.Error(err))
		return
	}
	log.Info(outcome+"; stage enqueued", zap.String("nextStage", stage), zap.String("newRequestId", nreq.ID))
}

// fencedBefore makes write, a Redis write fenced by the run's token that
// comes before a stage's label write, retrying transient errors, and
// reports whether the label write may follow: not when write failed for
// good (the heartbeat then expires and StaleJobDetector takes over) or
// found the run no longer holding the ticket. Both are logged with what.
func (a *attempt) fencedBefore(wctx context.Context, what string, write func() (bool, error)) bool {
	var held bool
	if err := retryTransient(wctx, func() (err error) {
		held, err = write()
		return err
	}); err != nil {
		a.log.Error(what+" before the label write failed (the heartbeat expires and StaleJobDetector takes over)", zap.Error(err))
		return false
	}
	if !held {
		a.log.Warn("run lost its ownership before " + what + "; no label written")
	}
	return held
}

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
	body := outcomeHead(headline, e.cfg.Instance, res, notes) +
		fmt.Sprintf("\nStage %s gets this stage's result or the tail of its output as `%s`.\n", sb.to, PreviousResultEnv)
	// The gate guards its stage whenever the ticket enters it: a
	// send-back to a gated stage parks the ticket for its approval.
	to, why := lifecycle.Enqueued, fmt.Sprintf("stage %s failed (%s); back to stage %s, send-back %d of %d", a.stage, p.Redact.String(res.Describe()), sb.to, sb.n, sb.max)
	if p.ApprovalFor(sb.to) != nil {
		ask := a.approvalAsk(sb.to)
		body = lifecycle.TruncateRunes(body, max(limit-len(ask)-2, 0)) + "\n\n" + ask
		to, why = lifecycle.AwaitingApproval, why+"; stage "+sb.to+" awaits approval"
	}
	body = lifecycle.TruncateRunes(body, limit)
	if err := a.postComment(wctx, body, ""); errors.Is(err, errLostRun) {
		log.Warn("run lost its ownership before the send-back comment", zap.Error(err))
		return
	} else if err != nil {
		log.Error("post the send-back comment; the ticket goes back", zap.Error(err))
	}
	a.enqueueStage(wctx, t, sb.to, to, "sent back", why, time.Time{})
}

// outputResult is a failed run's output tail as a result: the summary is
// the tail's last maxSummaryRunes characters (outputTail: redacted as
// written, control characters stripped).
func outputResult(res procrun.Result) Result {
	tail := outputTail(res)
	return Result{Summary: dropRunes(tail, utf8.RuneCountInString(tail)-maxSummaryRunes)}
}

// approvalAsk tells the ticket's readers that stage awaits approval and
// how to answer.
func (a *attempt) approvalAsk(stage string) string {
	p, labels := a.p, a.labels()
	if !p.Commands.Enabled {
		return fmt.Sprintf("stage %s awaits approval: add the label `%s` or `%s`.", stage, labels.Approved(), labels.Rejected())
	}
	return fmt.Sprintf("stage %s awaits approval: comment `%s approve`, or `%s reject` and why; or add the label `%s` or `%s`.",
		stage, p.Commands.Prefix, p.Commands.Prefix, labels.Approved(), labels.Rejected())
}

// reviewComment is the comment that asks for stage next's approval: the
// stage's result (body and short, doneComment's, when it has one) and how
// to approve or reject, bounded by the tracker's comment limit.
func (a *attempt) reviewComment(res procrun.Result, body, short, next string) (string, string) {
	return a.gateComment(res, body, short, a.approvalAsk(next))
}

// gateComment is the succeeded stage's comment (body, short; the stage's
// heading when the run has none to post) with note, what the next stage
// waits for, appended whole after cutting the rest to the tracker's limit.
func (a *attempt) gateComment(res procrun.Result, body, short, note string) (string, string) {
	e, p := a.e, a.p
	if body == "" {
		body = fmt.Sprintf("**%s**: stage %s succeeded (attempt %d)\n\n- duration: %s\n- instance: %s\n",
			e.cfg.Labels.Prefix, a.stage, a.req.Attempt, res.Duration.Round(time.Millisecond), e.cfg.Instance)
		short = body
	}
	limit := platforms.CommentLimit(p.Tracker) - len(note) - 2
	body = lifecycle.TruncateRunes(body, max(limit, 0)) + "\n\n" + note
	short = lifecycle.TruncateRunes(short, max(limit, 0)) + "\n\n" + note
	return body, short
}
