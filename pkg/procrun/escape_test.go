package procrun

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/eventually"
	"github.com/agentsmithd/agentsmithd/pkg/proctree"
	"github.com/agentsmithd/agentsmithd/pkg/runcg"
)

// escapeScript leaves the process group twice, as a hostile pipeline
// does: a new session (setsid) and a double fork re-parented to init.
// Both report their pid only once they run, so the test knows they
// started before the run ends.
const escapeScript = `setsid sh -c 'echo "escaped $$"; exec sleep 321' &
(sh -c 'echo "forked $$"; exec sleep 322' &) &
while [ "$(grep -c -e '^escaped' -e '^forked' out 2>/dev/null)" != 2 ]; do sleep 0.01; done
`

// escapingSpec runs escapeScript with a marker in its environment, which
// every process it starts inherits; the script's output goes to a file in
// dir, which it polls until both escapees have reported.
func escapingSpec(t *testing.T, marker string, tail string) Spec {
	t.Helper()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	return Spec{Argv: []string{sh, "-c", "exec >out 2>&1\n" + escapeScript + tail}, Dir: t.TempDir(),
		Env: []string{"PATH=/usr/bin:/bin", marker}}
}

func cgroups(t *testing.T) *runcg.Parent {
	t.Helper()
	p, err := runcg.Detect()
	if err != nil {
		t.Skipf("no run cgroups here: %v", err)
	}
	return p
}

// awaitNoneLeft waits until no live process carries marker.
func awaitNoneLeft(t *testing.T, marker string) {
	t.Helper()
	eventually.Wait(t, 5*time.Second, "no process of the run left", func() bool {
		left := proctree.WithEnv(marker)
		if len(left) > 0 {
			t.Logf("left: %v", left)
		}
		return len(left) == 0
	})
}

// A pipeline that escapes its process group (setsid, double fork) and
// exits 0 leaves nothing behind: its run cgroup is killed when it ends.
func TestEscapedProcessesEndWithTheRun(t *testing.T) {
	marker := fmt.Sprintf("AGENTSMITH_TEST_RUN=%s-%d", t.Name(), time.Now().UnixNano())
	spec := escapingSpec(t, marker, "exit 0\n")
	spec.Cgroups = cgroups(t)
	r := run(t, spec)
	if !r.OK() || r.Leftover != nil {
		t.Fatalf("got %s, leftover %v", r.Describe(), r.Leftover)
	}
	awaitNoneLeft(t, marker)
}

// Likewise when the run is ended by its timeout.
func TestEscapedProcessesEndWithATimedOutRun(t *testing.T) {
	marker := fmt.Sprintf("AGENTSMITH_TEST_RUN=%s-%d", t.Name(), time.Now().UnixNano())
	spec := escapingSpec(t, marker, "echo ready\nexec sleep 1000\n")
	spec.Cgroups = cgroups(t)
	spec.Timeout, spec.Grace = 2*time.Second, -1
	r := runCtx(t, context.Background(), spec)
	if !r.TimedOut || r.Leftover != nil {
		t.Fatalf("got %s, leftover %v", r.Describe(), r.Leftover)
	}
	if out, _ := os.ReadFile(filepath.Join(spec.Dir, "out")); !strings.Contains(string(out), "ready") {
		t.Fatalf("the timeout came before both escapees ran; output:\n%s", out)
	}
	awaitNoneLeft(t, marker)
}
