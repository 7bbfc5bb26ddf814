package config

import (
	"slices"
	"strings"
	"testing"
)

// Comment commands are on by default with the /agent-smith prefix; a
// project can turn them off or pick another prefix, which print-config
// shows; a prefix that could not be a command, or could match the
// daemon's own comments, is refused.
func TestCommands(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"T": "x"}
	c := mustParse(t, triggerBase, vars)
	if cm := c.Projects[0].Commands; !cm.On() || cm.Prefix != DefaultCommandPrefix {
		t.Errorf("default commands = %+v", cm)
	}
	c = mustParse(t, triggerBase+"    commands: {enabled: false, prefix: \"!bot\"}\n", vars)
	if cm := c.Projects[0].Commands; cm.On() || cm.Prefix != "!bot" {
		t.Errorf("commands = %+v", cm)
	}
	out, err := Marshal(c)
	if err != nil || !strings.Contains(string(out), "commands:\n") || !strings.Contains(string(out), "prefix: '!bot'") {
		t.Errorf("print-config does not show the commands (%v):\n%s", err, out)
	}
	for _, bad := range []string{`"/agent smith"`, `"**agent-smith**"`, `"` + strings.Repeat("x", 41) + `"`} {
		errs := parseErrs(t, triggerBase+"    commands: {prefix: "+bad+"}\n", vars)
		if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, "projects[0].commands.prefix") }) {
			t.Errorf("prefix %s: errors %q", bad, errs)
		}
	}
}
