package platforms

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// What counts as "blank" before a command is decided here, once, for both
// sides of a comment command (issue 41):
//
//   - the parser (CommentLine, then lifecycle.Commands.Parse) skips only
//     CommandBlanks, ASCII space and tab, before the command's prefix
//     (and "\r", "\n" for blank lines before the first line);
//   - the neutraliser (NoCommandLines) breaks every "/" that only Blank
//     runes separate from the start of the text or of a line, Blank being
//     every rune some reader of a comment may skip or show as nothing.
//
// The parser's blanks are a strict subset of the neutraliser's, so no line
// the daemon has neutralised is a command to the daemon
// (FuzzCommandVsNeutraliser), and the neutraliser still covers the
// parsers it does not control. The parser is kept strict, rather than made
// to accept every Blank, because a command should be what a person sees:
// a line that opens with an invisible or exotic space was not typed as a
// command, and the wider a parser's notion of space the more text other
// code has to neutralise for it. Azure DevOps is the one place a
// non-ASCII space is read as a space: its editor writes a typed space as
// &nbsp;, which htmlText decodes to " " (Blank covers U+00A0 for that).

// CommandBlanks are the only characters the parser skips before a
// command's prefix on its line.
const CommandBlanks = " \t"

// Blank reports whether r is blank to some reader of a comment, so the
// neutraliser looks through it for a "/" that opens a line:
//
//   - unicode.IsSpace: Go's, and Ruby's, Python's and JavaScript's Unicode
//     whitespace (U+0085 NEL, U+00A0 NBSP, U+1680, U+2000..U+200A such as
//     U+2003 EM SPACE, U+2028, U+2029, U+202F, U+205F, U+3000 …);
//   - every C0 control and DEL: Java's String.trim drops every char up to
//     U+0020 (Jira automation is Java), Python's str.isspace and
//     splitlines take U+001C..U+001F;
//   - U+FEFF: JavaScript's \s and String.prototype.trim skip it (a bot in
//     an Actions workflow);
//   - U+180E, U+200C, U+200D, U+2060: rendered as nothing (U+180E was
//     Unicode whitespace before 6.3 and older JavaScript engines still
//     skip it).
//
// U+200B, ZERO WIDTH SPACE, is not Blank although it renders as nothing:
// it is the mark the neutraliser puts before the "/", chosen because none
// of these readers skips it. Counting it would make the neutraliser's own
// output a blank-led "/" again, and NoCommandLines idempotent no longer
// (a GitLab note goes through it twice).
func Blank(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f:
		return true
	case r == 0xfeff, r == 0x180e, r == 0x200c, r == 0x200d, r == 0x2060:
		return true
	}
	return unicode.IsSpace(r)
}

// LineBreak reports whether r ends a line for some reader: "\n", "\r",
// and the breaks Python's str.splitlines and JavaScript's multiline ^
// also take (\v, \f, U+001C..U+001E, U+0085, U+2028, U+2029). Every
// LineBreak is Blank.
func LineBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

// TrimBlank is s without its leading Blank runes.
func TrimBlank(s string) string {
	return strings.TrimLeftFunc(s, Blank)
}

// lineLed reports whether the "/" at s[i] opens a line: only Blank runes
// come before it back to the start of s or to a LineBreak.
func lineLed(s string, i int) bool {
	for i > 0 {
		r, n := utf8.DecodeLastRuneInString(s[:i])
		if LineBreak(r) {
			return true
		}
		if !Blank(r) {
			return false
		}
		i -= n
	}
	return true
}
