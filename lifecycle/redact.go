package lifecycle

import (
	"fmt"
	"io"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/pkg/redact"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// What a pipeline prints or writes is hostile and, through the comments,
// public: a prompt-injected agent prints its secrets, and lines like
// "/close" or "@dependabot merge" are commands to the tracker or its bots.
// Every path from the pipeline to the outside goes through here:
//
//   - the output stream is redacted before the attempt log, the daemon's
//     debug log of pipeline lines and the failure comment's tail see it
//     (redactedOutput), so agentsmithctl logs and the status page, which
//     read the log file, show it redacted too;
//   - the result file and the progress lines are redacted when read
//     (redactResult, the progress comment's body), their @mentions broken;
//   - pipeline text a comment shows escaped for its markup is redacted
//     before it is escaped (escapeFor): an escaped secret ("ghp\_x") is no
//     longer one the Redactor knows, yet the tracker renders it as one;
//   - the result's description (git's stderr on a failed Prepare) is
//     redacted before the audit stream, the status page and the daemon's
//     log see it, and errors of the work branch's save before they are
//     logged;
//   - every comment body is redacted once more as a whole and has no line
//     starting with "/" (safeComment), on every platform.

// redactedOutput is the pipeline's output stream as the daemon keeps it:
// redacted (a secret split across writes included), then written to the
// attempt log (when there is one) and to a tail of tailBytes kept for the
// failure comment in place of procrun's, which holds the raw output.
type redactedOutput struct {
	w    *redact.Writer
	tail []byte
	max  int
}

// newRedactedOutput redacts r's secrets from the stream on its way to log
// (nil: no log file).
func newRedactedOutput(r *redact.Redactor, log io.Writer, tailBytes int) *redactedOutput {
	if tailBytes <= 0 {
		tailBytes = procrun.DefaultTailBytes
	}
	o := &redactedOutput{max: tailBytes}
	o.w = redact.NewWriter(r, writerFunc(func(p []byte) (int, error) {
		if log != nil {
			_, _ = log.Write(p)
		}
		o.tail = append(o.tail, p...)
		if len(o.tail) > 2*o.max {
			o.tail = append(o.tail[:0], o.tail[len(o.tail)-o.max:]...)
		}
		return len(p), nil
	}))
	return o
}

// Write never fails, like the attempt log.
func (o *redactedOutput) Write(p []byte) (int, error) {
	_, _ = o.w.Write(p)
	return len(p), nil
}

// finish writes what the redactor held back and returns the tail, starting
// at a rune boundary.
func (o *redactedOutput) finish() []byte {
	_ = o.w.Flush()
	t := o.tail
	if len(t) > o.max {
		t = t[len(t)-o.max:]
		for len(t) > 0 && !utf8.RuneStart(t[0]) {
			t = t[1:]
		}
	}
	return append([]byte(nil), t...)
}

// redactOutput is the stream the pipeline's output goes to: the project's
// secrets redacted before out (nil: no log file) and the tail see it.
func (a *attempt) redactOutput(out *attemptLog) *redactedOutput {
	var log io.Writer
	if out != nil {
		log = out
	}
	return newRedactedOutput(a.p.Redact, log, a.e.cfg.TailBytes)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// redactResult is res with r's secrets replaced in the summary and the link
// titles (renderResult breaks their @mentions); a link whose URL carries a secret in
// any form (raw, or decoded from its percent-encoding) is left out with a
// note: a redacted URL would lead nowhere.
func redactResult(r *redact.Redactor, res Result) (Result, []string) {
	res.Summary = r.String(res.Summary)
	links, dropped := res.Links[:0:0], 0
	for _, l := range res.Links {
		raw, _ := url.PathUnescape(l.URL)
		if r.Contains(l.URL) || r.Contains(raw) {
			dropped++
			continue
		}
		l.Title = r.String(l.Title)
		links = append(links, l)
	}
	res.Links = links
	if dropped > 0 {
		return res, []string{fmt.Sprintf("result file: %d link(s) left out: they carried a secret", dropped)}
	}
	return res, nil
}

// safeComment is body as the run posts it: r's secrets replaced, as a last
// net under the redaction of each part, and no line a command
// (platforms.NoCommandLines). A secret that shows only once the markup's
// escapes are read (rendered: "ghp\_x" renders as "ghp_x") was escaped
// before it was redacted, which escapeFor rules out; should a part get
// there all the same, its line is replaced by withheldLine, and the whole
// body by withheldComment when the secret spans lines.
func safeComment(r *redact.Redactor, body string) string {
	body = r.String(body)
	if r.Contains(rendered(body)) {
		lines := strings.Split(body, "\n")
		for i, l := range lines {
			if r.Contains(rendered(l)) {
				lines[i] = withheldLine
			}
		}
		body = strings.Join(lines, "\n")
		if r.Contains(rendered(body)) {
			body = withheldComment
		}
	}
	return platforms.NoCommandLines(body)
}

const (
	withheldLine    = "(line withheld: it held a secret)"
	withheldComment = "(comment withheld: it held a secret)"
)

// rendered is s as a reader sees it: CommonMark's backslash escapes of
// ASCII punctuation read (CommonMark 0.31 §2.4) and the zero-width spaces
// markdownEscape, jiraEscape and platforms.NoMentions add removed. Inside a
// code span the backslash stays; reading it there too only withholds more.
func rendered(s string) string {
	if !strings.ContainsAny(s, "\\\u200b") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]) {
			i++
		}
		b.WriteByte(s[i])
	}
	return strings.ReplaceAll(b.String(), "\u200b", "")
}

func isASCIIPunct(c byte) bool {
	return c < 0x80 && strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) >= 0
}
