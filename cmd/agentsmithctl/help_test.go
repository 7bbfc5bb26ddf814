package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// With $AGENTSMITH_CONFIG set, -c's help names the default once: the
// variable, not also its value as a second "(default ...)", and the
// variable still supplies the path.
func TestConfigFlagHelpShowsOneDefault(t *testing.T) {
	w := newWorld(t)
	t.Setenv("AGENTSMITH_CONFIG", w.path)
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, &out, &errOut); code != 0 {
		t.Fatalf("--help: exit %d: %s", code, errOut.String())
	}
	var line string
	for l := range strings.Lines(out.String()) {
		if strings.Contains(l, "--config") {
			line = l
		}
	}
	if strings.Count(line, "default") != 1 || strings.Contains(line, w.path) {
		t.Errorf("-c help line %q: want one default, naming $AGENTSMITH_CONFIG", line)
	}
	out.Reset()
	if code := run(context.Background(), []string{"status"}, &out, &errOut); code != 0 {
		t.Errorf("status with only $AGENTSMITH_CONFIG: exit %d: %s", code, errOut.String())
	}
}
