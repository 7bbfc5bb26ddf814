package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLogsPrintsAnAttemptsOutput(t *testing.T) {
	w := newWorld(t)
	w.cfg.Projects[0].Pipeline.Command = []string{"sh", "-c", `echo "hello from $AGENTSMITH_TICKET_ID"; echo oops >&2`}
	w.sim.CreateIssue(repo, "one", "", "agent-smith")
	w.runTicket(1)

	if out := w.mustCtl("logs", "github:acme/app#1"); out != "hello from acme/app#1\noops\n" {
		t.Errorf("logs = %q", out)
	}
	if out := w.mustCtl("logs", "github:acme/app#1", "--attempt", "1", "--follow"); out != "hello from acme/app#1\noops\n" {
		t.Errorf("logs --follow of a finished attempt = %q", out)
	}
	var rls []struct {
		Attempt  int    `json:"attempt"`
		Instance string `json:"instance"`
		Path     string `json:"path"`
	}
	if err := json.Unmarshal([]byte(w.mustCtl("-o", "json", "logs", "github:acme/app#1")), &rls); err != nil ||
		len(rls) != 1 || rls[0].Instance != "replica-a" || !filepath.IsAbs(rls[0].Path) {
		t.Errorf("-o json: %+v %v", rls, err)
	}
	if code, _, errOut := w.ctl("logs", "github:acme/app#1", "--attempt", "2"); code != exitNotFound || !strings.Contains(errOut, "no log of attempt 2") {
		t.Errorf("--attempt 2: exit %d %s", code, errOut)
	}
	// The file is on another machine: say which replica and path.
	if err := os.Remove(rls[0].Path); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := w.ctl("logs", "github:acme/app#1"); code != exitNotFound || !strings.Contains(errOut, "replica-a") || !strings.Contains(errOut, rls[0].Path) {
		t.Errorf("missing file: exit %d %s", code, errOut)
	}
	if code, _, _ := w.ctl("logs", "github:acme/app#2"); code != exitNotFound {
		t.Errorf("ticket without runs: exit %d", code)
	}
}

// --follow prints output as it is written and stops once the attempt is
// over and everything written before was printed.
func TestFollowLogUntilTheAttemptEnds(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "attempt-1.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := os.Open(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	polls := 0
	running := func(context.Context) (bool, error) {
		polls++
		switch polls {
		case 1:
			_, _ = f.WriteString("line 1\n")
			return true, nil
		case 2:
			if out.String() != "line 1\n" {
				t.Errorf("after the first poll printed %q", out.String())
			}
			_, _ = f.WriteString("line 2\n")
			return true, nil
		}
		// The run ended after writing its last line.
		_, _ = f.WriteString("last line\n")
		return false, nil
	}
	if err := followLog(context.Background(), &out, r, running, 1); err != nil {
		t.Fatal(err)
	}
	if out.String() != "line 1\nline 2\nlast line\n" || polls != 3 {
		t.Errorf("followed %q in %d polls", out.String(), polls)
	}
}

// A link in place of an attempt's log is not followed: logs does not print
// the root-only file it names.
func TestLogsNeverPrintsThroughALink(t *testing.T) {
	w := newWorld(t)
	w.sim.CreateIssue(repo, "one", "", "agent-smith")
	w.runTicket(1)
	var rls []struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal([]byte(w.mustCtl("-o", "json", "logs", "github:acme/app#1")), &rls); err != nil || len(rls) != 1 {
		t.Fatalf("-o json: %+v %v", rls, err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("root only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(rls[0].Path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, rls[0].Path); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := w.ctl("logs", "github:acme/app#1"); code == 0 || strings.Contains(out+errOut, "root only") {
		t.Errorf("logs through a link: exit %d %q %q", code, out, errOut)
	}
}
