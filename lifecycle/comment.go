package lifecycle

import (
	"strings"
	"time"
	"unicode/utf8"
)

// CommentTimeout bounds one comment with its retries and its short
// replacement, so the transition after it keeps the rest of the run's
// final write timeout: a tracker that keeps refusing a comment must not cost
// the ticket its Failed label (and the run a second attempt).
const CommentTimeout = 10 * time.Second

// StripControl removes C0 control characters other than newline and tab,
// and DEL, from s: trackers refuse some of them (a NUL in a JSON string) and
// terminals act on others (ESC sequences).
func StripControl(s string) string {
	return strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

// TruncateRunes keeps the first limit runes of s.
func TruncateRunes(s string, limit int) string {
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
