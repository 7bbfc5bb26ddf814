package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
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

// Every command's -o json output is one JSON document ending in a
// newline, so a shell prompt or the next command's output starts on a
// line of its own.
func TestJSONOutputEndsWithANewline(t *testing.T) {
	w := newWorld(t)
	n := w.sim.CreateIssue(repo, "one", "", "agent-smith")
	w.runTicket(n)
	ticket := "github:acme/app#1"
	// A stuck claim lock, for release (the first to write) to delete.
	if err := w.rdb.Set(t.Context(), keys.ClaimLock("github", "acme/app#1"), "replica-a/x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{
		{"status"}, {"tickets", "--project", "app"}, {"history", ticket}, {"logs", ticket}, {"events", "-n", "3"},
		{"release", ticket, "--yes"}, {"requeue", ticket}, {"retry", ticket}, {"cancel", ticket}, {"pause", "app"},
		{"resume", "app"}, {"report", "--project", "app"},
	} {
		code, out, errOut := w.ctl(append(argv, "-o", "json")...)
		if code != 0 {
			t.Errorf("%v -o json: exit %d: %s", argv, code, errOut)
			continue
		}
		var v any
		if !strings.HasSuffix(out, "}\n") && !strings.HasSuffix(out, "]\n") || json.Unmarshal([]byte(out), &v) != nil {
			t.Errorf("%v -o json: %q, want one JSON document and a newline", argv, out)
		}
	}
}
