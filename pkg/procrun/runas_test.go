package procrun

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
)

// Spec.Credential runs the command as another user; only root may.
func TestCredentialRunsAsAnotherUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("switching users needs root; run the tests as root to cover pipeline.run_as")
	}
	var out strings.Builder
	res := Run(context.Background(), Spec{Argv: []string{"id", "-u"}, Env: []string{"PATH=/usr/bin:/bin"},
		Dir: "/", Output: &out, Credential: &syscall.Credential{Uid: 65534, Gid: 65534}})
	if !res.OK() {
		t.Fatalf("id -u as 65534: %s (%v)", res.Describe(), res.Err)
	}
	if got := strings.TrimSpace(out.String()); got != "65534" {
		t.Errorf("id -u = %q, want 65534", got)
	}
}
