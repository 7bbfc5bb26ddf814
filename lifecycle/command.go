package lifecycle

import (
	"strings"
)

// Commands configures a project's comment commands (projects[].commands).
// The zero value turns them off.
type Commands struct {
	Enabled bool
	// Prefix must open the comment's first line, followed by a space and
	// the command.
	Prefix string
}

// Parse reads a comment's first line (platforms.WebhookEvent.Comment): ok
// when it is addressed to the daemon (the exact prefix, then nothing or
// whitespace), with the command word lower-cased ("" for the bare prefix).
// The daemon's own comments open with "**<label prefix>**:", never with a
// command.
func (c Commands) Parse(line string) (command string, ok bool) {
	if !c.Enabled || c.Prefix == "" {
		return "", false
	}
	rest, found := strings.CutPrefix(line, c.Prefix)
	if !found || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return "", false
	}
	if f := strings.Fields(rest); len(f) > 0 {
		return strings.ToLower(f[0]), true
	}
	return "", true
}
