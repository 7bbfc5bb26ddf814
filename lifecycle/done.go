package lifecycle

import (
	"fmt"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/platforms"
)

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
	body = fmt.Sprintf("**%s**: pipeline succeeded (attempt %d)\n\n- duration: %s\n- instance: %s\n",
		e.cfg.Labels.Prefix, a.req.Attempt, res.Duration.Round(time.Millisecond), e.cfg.Instance)
	body += noteLines(append(append([]string(nil), a.workNotes...), a.resultNotes...))
	short = truncateRunes(body, platforms.CommentLimit(p.Tracker))
	if rendered != "" {
		body += "\n" + rendered
	}
	body = truncateRunes(body, platforms.CommentLimit(p.Tracker))
	return safeComment(p.Redact, body), safeComment(p.Redact, short)
}
