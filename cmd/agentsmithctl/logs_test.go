package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
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

// An operator's retry starts a new run at attempt 1: the failed run's log
// is still printed by logs --run 1, and is not the new run's.
func TestLogsKeepsTheRetriedRunsLog(t *testing.T) {
	w := newWorld(t)
	runs := filepath.Join(t.TempDir(), "runs")
	w.cfg.Projects[0].Pipeline.Command = []string{"sh", "-c",
		`echo x >> "$0"; n=$(wc -l < "$0"); echo "run $n attempt $AGENTSMITH_ATTEMPT"; [ "$n" -gt 1 ]`, runs}
	n := w.sim.CreateIssue(repo, "fails once", "", "agent-smith")
	ticket := fmt.Sprintf("github:%s#%d", repo, n)
	w.runTicketTo(n, lifecycle.Failed, true)
	if out := w.mustCtl("retry", ticket); !strings.Contains(out, "retried") {
		t.Fatalf("retry:\n%s", out)
	}
	w.runTicketTo(n, lifecycle.Done, false)

	var rls []struct {
		Run     int    `json:"run"`
		Attempt int    `json:"attempt"`
		Path    string `json:"path"`
	}
	if err := json.Unmarshal([]byte(w.mustCtl("-o", "json", "logs", ticket)), &rls); err != nil || len(rls) != 2 ||
		rls[0].Run != 1 || rls[1].Run != 2 || rls[0].Attempt != 1 || rls[1].Attempt != 1 || rls[0].Path == rls[1].Path {
		t.Errorf("-o json: %+v %v", rls, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "run 2 attempt 1\n"},
		{[]string{"--run", "1"}, "run 1 attempt 1\n"},
		{[]string{"--run", "1", "--attempt", "1"}, "run 1 attempt 1\n"},
		{[]string{"--run", "2", "--attempt", "1"}, "run 2 attempt 1\n"},
	} {
		if out := w.mustCtl(append([]string{"logs", ticket}, c.args...)...); out != c.want {
			t.Errorf("logs %v = %q, want %q", c.args, out, c.want)
		}
	}
	if code, _, errOut := w.ctl("logs", ticket, "--run", "3"); code != exitNotFound || !strings.Contains(errOut, "run 1 attempts 1-1, run 2 attempts 1-1") {
		t.Errorf("--run 3: exit %d %s", code, errOut)
	}
}

// --follow prints output as it is written and stops once the attempt is
// over and everything written before was printed.
func TestFollowLogUntilTheAttemptEnds(t *testing.T) {
	t.Parallel()
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
