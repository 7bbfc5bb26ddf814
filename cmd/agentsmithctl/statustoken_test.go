package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/statustoken"
)

// status-token prints the token the daemon created beside the config (as
// serve does on its first start), or status.token when the config sets
// one; it needs no tracker secret and refuses a file others may read.
func TestStatusTokenPrintsTheAdminToken(t *testing.T) {
	w := newWorld(t)
	if code, _, errOut := w.ctl("status-token"); code != exitNotFound || !strings.Contains(errOut, "agentsmithd serve") {
		t.Errorf("before the daemon's first start: exit %d %s, want 3 naming serve", code, errOut)
	}
	path := filepath.Join(filepath.Dir(w.path), "agentsmithd.status-token")
	token, created, err := statustoken.Ensure(path)
	if err != nil || !created {
		t.Fatal(created, err)
	}
	if err := os.Unsetenv("CTL_TEST_TOKEN"); err != nil { // t.Setenv restores it
		t.Fatal(err)
	}
	if out := w.mustCtl("status-token"); out != token+"\n" {
		t.Errorf("status-token = %q, want the file's token", out)
	}
	if out := w.mustCtl("status-token", "-o", "json"); !strings.Contains(out, `"source": "file:`+path+`"`) {
		t.Errorf("status-token -o json = %s", out)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := w.ctl("status-token"); code != exitError || strings.Contains(out, token) || !strings.Contains(errOut, "chmod 600") {
		t.Errorf("a 0644 token file: exit %d %q %s, want refused", code, out, errOut)
	}

	t.Setenv("CTL_STATUS_TOKEN", "configured-status-token")
	cfg, err := os.ReadFile(w.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.path, append(cfg, "status: {token_env: CTL_STATUS_TOKEN}\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := w.mustCtl("status-token"); out != "configured-status-token\n" {
		t.Errorf("status-token with status.token set = %q", out)
	}
}
