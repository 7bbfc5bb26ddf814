package lifecycle_test

import (
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/platforms"
)

func TestCommandsParse(t *testing.T) {
	on := lifecycle.Commands{Enabled: true, Prefix: "/agent-smith"}
	for _, c := range []struct {
		cmds    lifecycle.Commands
		line    string
		want    string
		command bool
	}{
		{on, "/agent-smith retry", "retry", true},
		{on, "/agent-smith   Cancel  now", "cancel", true},
		{on, "/agent-smith", "", true},
		{on, "/agent-smithy retry", "", false},
		{on, " /agent-smith retry", "", false}, // CommentLine trims; a raw leading space is not the prefix
		{on, "please /agent-smith retry", "", false},
		{on, "**agent-smith**: cancelled (cancelled by x with a comment command)", "", false},
		{lifecycle.Commands{Prefix: "/agent-smith"}, "/agent-smith retry", "", false}, // disabled
		{lifecycle.Commands{Enabled: true, Prefix: "!bot"}, "!bot retry", "retry", true},
	} {
		got, ok := c.cmds.Parse(c.line)
		if got != c.want || ok != c.command {
			t.Errorf("Parse(%q) = %q, %v; want %q, %v", c.line, got, ok, c.want, c.command)
		}
	}
}

// The daemon reads a command from a comment's first line
// (platforms.CommentLine, then Commands.Parse); it neutralises every line
// of pipeline text it posts (platforms.NoCommandLines). The two share one
// notion of blank (platforms/blank.go), and these tests hold them to it
// (issue 41).
var neutralCases = []string{
	"\u00a0/agent-smith approve",
	"\u2003/agent-smith approve",
	"\u3000/agent-smith approve",
	"\u0085/agent-smith approve",
	"\u2028/agent-smith approve",
	"\u2029/agent-smith approve",
	"\ufeff/agent-smith approve",
	"\r\n/agent-smith approve\r\n",
	"ok\r/agent-smith approve",
	" \t/agent-smith approve",
	"/agent-smith reject because\n\u00a0/agent-smith approve",
}

// parses reports whether text, or any line of it as any reader splits
// lines, is a command to the daemon: as posted, and as Azure DevOps'
// webhook reads it (its htmlText decodes &nbsp; and U+00A0 to " ").
func parses(cmds lifecycle.Commands, text string) bool {
	ado := strings.NewReplacer("\u00a0", " ")
	lines := append([]string{text}, strings.FieldsFunc(text, platforms.LineBreak)...)
	for _, l := range lines {
		for _, v := range []string{l, ado.Replace(l)} {
			if _, ok := cmds.Parse(platforms.CommentLine(v)); ok {
				return true
			}
		}
	}
	return false
}

func TestCommandVsNeutraliser(t *testing.T) {
	on := lifecycle.Commands{Enabled: true, Prefix: "/agent-smith"}
	for _, in := range neutralCases {
		if out := platforms.NoCommandLines(in); parses(on, out) {
			t.Errorf("NoCommandLines(%q) = %q still parses as a command", in, out)
		}
	}
	// The parser takes only ASCII blanks before the prefix: a human's
	// "\u00a0/agent-smith approve" (or any other blank) is no command.
	for _, in := range neutralCases[:7] {
		if _, ok := on.Parse(platforms.CommentLine(in)); ok {
			t.Errorf("%q parses as a command", in)
		}
	}
}

// FuzzCommandVsNeutraliser: whatever the text, once neutralised no line of
// it is a command to the daemon, and no line opens with a "/" after
// Blank runes; and a text the daemon reads as a command is one the
// neutraliser changes.
func FuzzCommandVsNeutraliser(f *testing.F) {
	for _, c := range neutralCases {
		f.Add(c)
	}
	f.Add("/agent-smith")
	f.Add("x\u200b/agent-smith approve")
	on := lifecycle.Commands{Enabled: true, Prefix: "/agent-smith"}
	f.Fuzz(func(t *testing.T, in string) {
		out := platforms.NoCommandLines(in)
		if parses(on, out) {
			t.Fatalf("NoCommandLines(%q) = %q parses as a command", in, out)
		}
		for _, l := range strings.FieldsFunc(out, platforms.LineBreak) {
			if strings.HasPrefix(platforms.TrimBlank(l), "/") {
				t.Fatalf("NoCommandLines(%q) = %q leaves line %q", in, out, l)
			}
		}
		if _, ok := on.Parse(platforms.CommentLine(in)); ok && out == in {
			t.Fatalf("%q is a command the neutraliser leaves as it is", in)
		}
		if again := platforms.NoCommandLines(out); again != out {
			t.Fatalf("NoCommandLines not idempotent on %q: %q, then %q", in, out, again)
		}
	})
}
