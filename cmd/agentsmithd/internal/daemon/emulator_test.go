package daemon

import (
	"os/exec"
	"strings"
	"testing"
)

// The daemon binary links trackersim for `agentsmithd demo` only
// (docs/architecture.md, design decisions); what `serve` wires must not
// reach it, directly or through a dependency, so no production path can
// construct an emulator that accepts any token.
func TestServeDoesNotLinkTheEmulator(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasSuffix(p, "agentsmithd/trackersim") || strings.HasSuffix(p, "internal/simcases") {
			t.Errorf("the daemon's serve path depends on %s", p)
		}
	}
}
