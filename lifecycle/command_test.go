package lifecycle_test

import (
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
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
