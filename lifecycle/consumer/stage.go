package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// The environment a stage's run gets besides the pipeline's.
const (
	// StageEnv names the stage the run is ("plan").
	StageEnv = "AGENTSMITH_STAGE"
	// PreviousResultEnv holds the result the previous stage's pipeline
	// wrote to $AGENTSMITH_RESULT_FILE, as JSON {summary, links}, bounded
	// as ReadResult bounds it; unset in the first stage or when the
	// previous stage wrote none that is still kept (keys.StageResultTTL).
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
// previous stage's result, when the last stage result kept is that
// stage's (a re-run of the first stage never sees an older run's result).
func (a *attempt) stageEnv(ctx context.Context) []string {
	if a.stage == "" {
		return nil
	}
	env := []string{StageEnv + "=" + a.stage}
	names := a.p.StageNames()
	i := slices.Index(names, a.stage)
	if i <= 0 {
		return env
	}
	r, ok, err := runstate.LastStageResult(ctx, a.e.rdb, a.req.Ref)
	switch {
	case err != nil:
		a.log.Warn("read the previous stage's result; the stage runs without it", zap.Error(err))
	case ok && r.Stage == names[i-1] && len(r.Result) > 0:
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
	switch ok, err := runstate.PutStageResult(wctx, e.rdb, req.Ref, a.token, runstate.StageResult{Stage: a.stage, Result: result}); {
	case err != nil:
		log.Warn("keep the stage's result for the next stage; it runs without it", zap.Error(err))
	case !ok:
		log.Warn("run lost its ownership after its stage succeeded; no label written")
		return
	}
	if body, short := a.doneComment(res); body != "" {
		if err := a.postComment(wctx, body, short); errors.Is(err, errLostRun) {
			log.Warn("run lost its ownership before the stage's comment", zap.Error(err))
			return
		} else if err != nil {
			log.Error("post the stage's comment; the ticket moves on", zap.Error(err))
		}
	}
	why := fmt.Sprintf("stage %s succeeded; stage %s next", a.stage, next)
	if err := retryTransient(wctx, func() error {
		_, err := a.moveStageAs(wctx, t, lifecycle.InProgress, lifecycle.Enqueued, next, "stage succeeded", why)
		t = nil // moveAs re-reads after a failure; the snapshot is spent
		return err
	}); err != nil {
		log.Error("transition to the next stage (the heartbeat expires and StaleJobDetector takes over)", zap.Error(err))
		return
	}
	// Attempts count per stage: the next stage's first request is attempt
	// 1, which Take would refuse as stale beside this stage's count.
	if err := runstate.StartOver(wctx, e.rdb, req.Ref); err != nil {
		log.Warn("start the attempt count over for the next stage", zap.Error(err))
	}
	a.releaseRun(false)
	nreq := lifecycle.PipelineRequest{ID: redislock.NewToken(), Ref: req.Ref, Source: lifecycle.SourceStage, Attempt: 1,
		EnqueuedAt: e.cfg.Clock().UTC(), ClaimedAt: req.ClaimedAt, Priority: req.Priority, Stage: next}
	if err := e.queue.Push(wctx, nreq.Encode()); err != nil {
		log.Error("push the next stage's request (EnqueuedReconciler will re-push)", zap.Error(err))
		return
	}
	log.Info("stage succeeded; next stage enqueued", zap.String("nextStage", next), zap.String("newRequestId", nreq.ID))
}
