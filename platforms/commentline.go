package platforms

import (
	"strings"
	"unicode/utf8"
)

// MaxCommentLine bounds WebhookEvent.Comment: a command is a few words, so
// a longer first line is cut (and never a command); nothing downstream
// handles a whole hostile comment.
const MaxCommentLine = 200

// CommentLine is the first line of a comment's text, trimmed, cut to at
// most MaxCommentLine bytes on a rune boundary. Leading blank lines are
// skipped: editors (Jira's, Azure DevOps') may open a comment with one.
func CommentLine(text string) string {
	text = strings.TrimLeft(text, " \t\r\n")
	if i := strings.IndexAny(text, "\r\n"); i >= 0 {
		text = text[:i]
	}
	if len(text) > MaxCommentLine {
		text = text[:MaxCommentLine]
		for !utf8.ValidString(text) {
			text = text[:len(text)-1]
		}
	}
	return strings.TrimSpace(text)
}
