package procrun

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/runcg"
	"github.com/agentsmithd/agentsmithd/pkg/sandbox"
	"github.com/agentsmithd/agentsmithd/pkg/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitArg {
		os.Exit(sandbox.Init())
	}
	os.Exit(m.Run())
}

// sandboxed returns a spec that runs script (sh) in a sandbox of its own,
// with a work dir its host uid owns; it skips where the machine cannot
// start a sandbox, naming what is missing.
func sandboxed(t *testing.T, script string) Spec {
	t.Helper()
	exe, box := sandboxtest.Exe(t), sandboxtest.Spec(t)
	return Spec{Argv: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"}, Dir: box.WorkDir, Grace: time.Second,
		Sandbox: box, SandboxExe: exe}
}

// A sandboxed run reads as an unsandboxed one: the pipeline's exit status
// and terminating signal, not the init's, its output and stdin, its
// timeout.
func TestSandboxedRunReportsThePipeline(t *testing.T) {
	spec := sandboxed(t, "echo uid=$(id -u) init=$(tr '\\0' ' ' </proc/1/cmdline); exit 3")
	res := Run(context.Background(), spec)
	if res.Err != nil || res.ExitCode != 3 || res.Signal != "" {
		t.Fatalf("exit 3 sandboxed: %+v (%s)", res, res.Tail)
	}
	// Inside, the pipeline is uid 1000 in a PID namespace of its own,
	// whose pid 1 is the sandbox's init.
	if got := string(res.Tail); !strings.Contains(got, "uid=1000 init=") || !strings.Contains(got, sandbox.InitArg) {
		t.Errorf("output %q, want the sandbox's uid 1000 and its init as pid 1", got)
	}

	spec = sandboxed(t, "kill -TERM $$")
	if res := Run(context.Background(), spec); res.Signal != "terminated" {
		t.Errorf("a pipeline killed by SIGTERM: %+v, want Signal terminated", res)
	}

	spec = sandboxed(t, "cat")
	spec.Stdin = []byte("ticket json")
	if res := Run(context.Background(), spec); !res.OK() || string(res.Tail) != "ticket json" {
		t.Errorf("stdin: %+v %q", res, res.Tail)
	}

	spec = sandboxed(t, "trap 'echo got TERM; exit 7' TERM; while :; do sleep 0.05; done")
	spec.Timeout = 300 * time.Millisecond
	res = Run(context.Background(), spec)
	if !res.TimedOut || res.ExitCode != 7 || !strings.Contains(string(res.Tail), "got TERM") {
		t.Errorf("timeout: %+v %q, want the pipeline's own SIGTERM handler to end it with 7", res, res.Tail)
	}
}

// A sandbox that cannot be set up says so as a start failure.
func TestSandboxSetupFailureIsAStartFailure(t *testing.T) {
	spec := sandboxed(t, "true")
	if err := os.Remove(spec.Sandbox.WorkDir); err != nil {
		t.Fatal(err)
	}
	spec.Dir = "/"
	res := Run(context.Background(), spec)
	if res.Err == nil || !strings.Contains(res.Describe(), "failed to start: sandbox") {
		t.Errorf("a work dir that is gone: %+v, want a start failure naming the sandbox", res)
	}
}

// A limit that ends a sandboxed run is named in its Result; without the
// limit the same run succeeds (the control).
func TestSandboxedRunNamesTheLimitThatEndedIt(t *testing.T) {
	cg, err := runcg.DetectLimits()
	if err != nil {
		t.Skipf("no run cgroups: %v", err)
	}
	if err := cg.EnableLimits(); err != nil {
		t.Skipf("no cgroup limits: %v", err)
	}
	if mem, _, _, where := cg.Controllers(); !mem {
		t.Skipf("no memory controller (%s)", where)
	}
	// 64 MiB of zeroes through a shell variable: head keeps them all.
	hog := "x=$(head -c 67108864 /dev/zero | tr '\\0' a); echo ${#x}"
	spec := sandboxed(t, hog)
	spec.Cgroups = cg
	if res := Run(context.Background(), spec); !res.OK() || res.LimitHit != "" {
		t.Fatalf("control without a limit: %+v %q", res, res.Tail)
	}
	spec = sandboxed(t, hog)
	spec.Cgroups, spec.Limits = cg, runcg.Limits{MemoryBytes: 32 << 20}
	res := Run(context.Background(), spec)
	if res.OK() || res.LimitHit != "memory limit 32 MiB reached" || !strings.Contains(res.Describe(), "(memory limit 32 MiB reached)") {
		t.Errorf("under 32 MiB: %+v, describe %q", res, res.Describe())
	}
}
