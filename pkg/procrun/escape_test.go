package procrun_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/pkg/procrun/procruntest"
	"github.com/agentsmithd/agentsmithd/pkg/runcg"
)

func cgroups(t *testing.T) *runcg.Parent {
	t.Helper()
	p, err := runcg.Detect()
	if err != nil {
		t.Skipf("no run cgroups here: %v", err)
	}
	return p
}

// A pipeline that escapes its process group (setsid, double fork) and
// exits 0 leaves nothing behind: its run cgroup is killed when it ends.
func TestEscapedProcessesEndWithTheRun(t *testing.T) {
	e := procruntest.NewEscaping(t, "exit 0\n")
	e.Spec.Cgroups = cgroups(t)
	r := procrun.Run(context.Background(), e.Spec)
	if !r.OK() || r.Leftover != nil {
		t.Fatalf("got %s, leftover %v", r.Describe(), r.Leftover)
	}
	e.Escaped(t)
	e.NoneLeft(t)
}

// Likewise when the run is ended by its timeout, the whole group
// SIGKILLed at once.
func TestEscapedProcessesEndWithATimedOutRun(t *testing.T) {
	e := procruntest.NewEscaping(t, "exec sleep 1000\n")
	e.Spec.Cgroups = cgroups(t)
	e.Spec.Timeout, e.Spec.Grace = 2*time.Second, -1
	r := procrun.Run(context.Background(), e.Spec)
	if !r.TimedOut || r.Leftover != nil {
		t.Fatalf("got %s, leftover %v", r.Describe(), r.Leftover)
	}
	e.Escaped(t)
	e.NoneLeft(t)
}
