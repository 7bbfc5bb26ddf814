package runguard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/pkg/sandbox"
	"github.com/agentsmithd/agentsmithd/pkg/sandbox/sandboxtest"
)

// boxFor returns a sandbox for one guarded run with a work dir its host
// uid owns, and the init binary; it skips where no sandbox can start.
func boxFor(t *testing.T) (*sandbox.Spec, string) {
	t.Helper()
	exe := sandboxtest.Exe(t)
	return sandboxtest.Spec(t), exe
}

// The guard stays outside the sandbox, where it reads the run's token in
// Redis, and the pipeline inside cannot reach that Redis; the run's
// status is the pipeline's. Without the sandbox the same pipeline
// reaches Redis (the control).
func TestGuardRunsThePipelineInItsSandbox(t *testing.T) {
	rdb, l := setup(t)
	addr := strings.Split(l.Redis.Addrs[0], ":")
	probe := `echo uid=$(id -u); if (exec 3<>/dev/tcp/` + addr[0] + `/` + addr[1] + `) 2>/dev/null; then echo redis reached; fi; exit 4`

	res, out := run(t, l, procrun.Spec{Argv: []string{"/bin/bash", "-c", probe}, Dir: t.TempDir()})
	if r := <-res; r.ExitCode != 4 || !strings.Contains(out.String(), "redis reached") {
		t.Fatalf("control, unsandboxed: %s\n%s", r.Describe(), out)
	}

	box, exe := boxFor(t)
	res, out = run(t, l, procrun.Spec{Argv: []string{"/bin/bash", "-c", probe}, Dir: box.WorkDir, Sandbox: box, SandboxExe: exe})
	r := <-res
	if r.ExitCode != 4 || r.Err != nil {
		t.Fatalf("sandboxed: %s, want the pipeline's exit status 4\n%s", r.Describe(), out)
	}
	if got := out.String(); !strings.Contains(got, "uid=1000") || strings.Contains(got, "redis reached") {
		t.Errorf("sandboxed output %q: want uid 1000 and Redis out of reach", got)
	}

	// The guard still watches: a run taken over dies, sandbox and all.
	box, exe = boxFor(t)
	res, out = run(t, l, procrun.Spec{Argv: []string{"/bin/sh", "-c", "sleep 1000 & echo started; wait"},
		Dir: box.WorkDir, Sandbox: box, SandboxExe: exe})
	eventually.Wait(t, 10*time.Second, "the sandboxed pipeline to start", func() bool { return strings.Contains(out.String(), "started") })
	if ok, err := runstate.Evict(t.Context(), rdb, ref, "A"); err != nil || !ok {
		t.Fatalf("evict: %v %v", ok, err)
	}
	select {
	case r := <-res:
		if r.Signal != "killed" {
			t.Errorf("taken over: %s, want killed", r.Describe())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the guard did not kill the sandboxed run it no longer owns")
	}
}
