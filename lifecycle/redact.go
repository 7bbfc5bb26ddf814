package lifecycle

import (
	"strings"

	"github.com/agentsmithd/agentsmithd/pkg/redact"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// SafeComment is body as the run posts it: r's secrets replaced, as a last
// net under the redaction of each part, and no line a command
// (platforms.NoCommandLines). A secret that shows only once the markup's
// escapes are read (rendered: "ghp\_x" renders as "ghp_x") was escaped
// before it was redacted, which escapeFor rules out; should a part get
// there all the same, its line is replaced by withheldLine, and the whole
// body by withheldComment when the secret spans lines.
func SafeComment(r *redact.Redactor, body string) string {
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
