package platforms

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxCommentLine bounds WebhookEvent.Comment: a command is a few words, so
// a longer first line is cut (and never a command); nothing downstream
// handles a whole hostile comment.
const MaxCommentLine = 200

// CommentLine is the first line of a comment's text, trimmed, cut to at
// most MaxCommentLine bytes on a rune boundary. Leading blank lines are
// skipped: editors (Jira's, Azure DevOps') may open a comment with one.
//
// Only CommandBlanks and line breaks are skipped before the text: a line
// that opens with any other blank (U+00A0, U+3000, U+FEFF, …) is kept as
// it is and so is no command, as NoCommandLines assumes (blank.go). The
// end is trimmed of all Unicode space.
func CommentLine(text string) string {
	text = strings.TrimLeft(text, CommandBlanks+"\r\n")
	if i := strings.IndexAny(text, "\r\n"); i >= 0 {
		text = text[:i]
	}
	if len(text) > MaxCommentLine {
		text = text[:MaxCommentLine]
		for !utf8.ValidString(text) {
			text = text[:len(text)-1]
		}
	}
	return strings.TrimRightFunc(strings.TrimLeft(text, CommandBlanks), unicode.IsSpace)
}
