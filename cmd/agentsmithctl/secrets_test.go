package main

import (
	"os"
	"strings"
	"testing"
)

// Commands that only read or write Redis need only the redis section: they
// run with every tracker secret unset, while the commands that talk to a
// tracker still say which secret is missing.
func TestRedisOnlyCommandsNeedNoTrackerSecrets(t *testing.T) {
	w := newWorld(t)
	w.sim.CreateIssue(repo, "one", "", "agent-smith")
	w.runTicket(1)
	if err := os.Unsetenv("CTL_TEST_TOKEN"); err != nil { // t.Setenv restores it
		t.Fatal(err)
	}
	for _, argv := range [][]string{
		{"status"},
		{"history", "github:acme/app#1"},
		{"events", "-n", "5"},
		{"report", "--project", "app"},
		{"cancel", "github:acme/app#1", "--reason", "test"},
		{"release", "github:acme/app#1", "--yes"},
	} {
		code, out, errOut := w.ctl(argv...)
		if strings.Contains(errOut, "CTL_TEST_TOKEN") || (code != 0 && code != exitNotFound) {
			t.Errorf("%v without tracker secrets: exit %d\n%s%s", argv, code, out, errOut)
		}
	}
	for _, argv := range [][]string{{"tickets", "--project", "app"}, {"requeue", "github:acme/app#1"}} {
		code, _, errOut := w.ctl(argv...)
		if code != exitError || !strings.Contains(errOut, "CTL_TEST_TOKEN is not set") {
			t.Errorf("%v without the token: exit %d, want 1 naming CTL_TEST_TOKEN: %s", argv, code, errOut)
		}
	}
}
