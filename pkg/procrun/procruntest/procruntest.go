// Package procruntest holds the hostile pipeline that escapes its process
// group, for the tests of everything that must kill a run's processes
// (procrun, the run guard), and the check that none is left.
package procruntest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/pkg/proctree"
)

// escapeScript leaves the process group twice, as a hostile pipeline
// does: a new session (setsid) and a double fork re-parented away from
// it. Each escapee reports its pid once it runs, and the script goes on
// only when both have, so they exist before the run can end.
const escapeScript = `exec >out 2>&1
setsid sh -c 'echo "escaped $$"; exec sleep 321' &
(sh -c 'echo "forked $$"; exec sleep 322' &) &
while [ "$(grep -c -e '^escaped' -e '^forked' out 2>/dev/null)" != 2 ]; do sleep 0.01; done
echo ready
`

// Escaping is a pipeline that runs escapeScript and then the shell
// code then (e.g.
// "exit 0", or "exec sleep 1000" to be timed out), with a marker in its
// environment that every process it starts inherits. It writes its output
// to the file "out" in its working directory.
type Escaping struct {
	Spec   procrun.Spec
	Marker string
}

// NewEscaping makes the pipeline; it skips the test where setsid is missing.
func NewEscaping(t *testing.T, then string) Escaping {
	t.Helper()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	marker := fmt.Sprintf("AGENTSMITH_TEST_RUN=%s-%d", t.Name(), time.Now().UnixNano())
	return Escaping{Marker: marker, Spec: procrun.Spec{Argv: []string{"/bin/sh", "-c", escapeScript + then},
		Dir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin", marker}}}
}

// Escaped fails the test unless both escapees ran before the run ended:
// a run ended earlier proves nothing.
func (e Escaping) Escaped(t *testing.T) {
	t.Helper()
	if !e.ready() {
		out, _ := os.ReadFile(filepath.Join(e.Spec.Dir, "out"))
		t.Fatalf("the run ended before both escapees ran; output:\n%s", out)
	}
}

// AwaitEscaped waits until both escapees run.
func (e Escaping) AwaitEscaped(t *testing.T) {
	t.Helper()
	eventually.Wait(t, 10*time.Second, "both escapees to run", e.ready)
}

func (e Escaping) ready() bool {
	out, _ := os.ReadFile(filepath.Join(e.Spec.Dir, "out"))
	return strings.Contains(string(out), "ready")
}

// NoneLeft waits until no live process carries the marker. Whatever still
// does when the test ends is killed then, so a failed run leaves nothing.
func (e Escaping) NoneLeft(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		for _, pid := range proctree.WithEnv(e.Marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	eventually.Wait(t, 5*time.Second, "no process of the run left (env "+e.Marker+")", func() bool {
		return len(proctree.WithEnv(e.Marker)) == 0
	})
}
