package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// doneComment posts the Done comment of a successful run, before the Done
// label: the work branch it pushed and the pipeline's result (summary,
// links such as the pull request it opened). A run with nothing of either
// to show posts none, as before. A comment that fails is logged and the
// transition goes ahead: the result is a courtesy, the label is the state.
func (a *attempt) doneComment(ctx context.Context, res procrun.Result) {
	e, p := a.e, a.p
	rendered := renderResult(p.Redact, p.Platform, a.result)
	if rendered == "" && len(a.workNotes) == 0 && len(a.resultNotes) == 0 {
		return
	}
	body := fmt.Sprintf("**%s**: pipeline succeeded (attempt %d)\n\n- duration: %s\n- instance: %s\n",
		e.cfg.Labels.Prefix, a.req.Attempt, res.Duration.Round(time.Millisecond), e.cfg.Instance)
	body += noteLines(append(append([]string(nil), a.workNotes...), a.resultNotes...))
	short := truncateRunes(body, platforms.CommentLimit(p.Tracker))
	if rendered != "" {
		body += "\n" + rendered
	}
	body = truncateRunes(body, platforms.CommentLimit(p.Tracker))
	if err := a.postComment(ctx, body, short); err != nil && !errors.Is(err, errLostRun) {
		a.log.Error("post done comment; the transition goes ahead", zap.Error(err))
	}
}
