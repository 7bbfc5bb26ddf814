package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// postComment posts body on ref, fenced, retrying transient errors within
// its own deadline (commentTimeout, or the attempt's commentBudget) so the caller's following transition
// keeps its budget. A tracker that refuses body for good
// (platforms.ErrRejected: too long, or anything else a 4xx says) gets short
// instead, once; the caller moves the ticket either way.
func (a *attempt) postComment(ctx context.Context, body, short string) error {
	p, ref, fence, log := a.p, a.req.Ref, a.fence, a.log
	body, short = safeComment(p.Redact, body), safeComment(p.Redact, short)
	budget := commentTimeout
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
	tail := platforms.NoCommandLines(platforms.NoMentions(strings.TrimRight(stripControl(strings.ToValidUTF8(string(res.Tail), "\uFFFD")), "\n")))
	if tail == "" {
		return truncateRunes(head+"\n(no output)\n", limit)
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
	return truncateRunes(head+"\n(output omitted: too long for the tracker's comment limit)\n", limit)
}

// shortOutcomeComment is outcomeComment without the output, for a tracker
// that refused the full comment.
func shortOutcomeComment(headline, instance string, res procrun.Result, notes []string, limit int) string {
	return truncateRunes(outcomeHead(headline, instance, res, notes)+"\n(output omitted: the tracker refused the full comment)\n", limit)
}

func outcomeHead(headline, instance string, res procrun.Result, notes []string) string {
	var b strings.Builder
	b.WriteString(stripControl(headline) + "\n\n")
	// The result's description (git's stderr on a failed Prepare) and the
	// notes (the save's error, the result file's warnings) carry text the
	// pipeline chose: no mention in them notifies anyone.
	fmt.Fprintf(&b, "- result: %s\n", platforms.NoMentions(stripControl(res.Describe())))
	fmt.Fprintf(&b, "- duration: %s\n", res.Duration.Round(time.Millisecond))
	fmt.Fprintf(&b, "- instance: %s\n", instance)
	for _, n := range notes {
		fmt.Fprintf(&b, "- %s\n", platforms.NoMentions(stripControl(n)))
	}
	return b.String()
}

// stripControl removes C0 control characters other than newline and tab,
// and DEL, from s: trackers refuse some of them (a NUL in a JSON string) and
// terminals act on others (ESC sequences).
func stripControl(s string) string {
	return strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f {
			return -1
		}
		return r
	}, s)
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

// truncateRunes keeps the first limit runes of s.
func truncateRunes(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	n := 0
	for i := range s {
		if n == limit {
			return s[:i]
		}
		n++
	}
	return s
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
