package sandbox

import (
	"fmt"
	"strings"
	"testing"
)

// TestNproc: a run under Nproc 32 cannot have more than 32 tasks of its
// uid: a loop starting 64 children has a fork refused (EAGAIN) before
// the 32nd. Control: the same loop under the same spec without Nproc
// starts all 64.
func TestNproc(t *testing.T) {
	s := newSpec(t, reachableDir(t), "run")
	if r := run(t, &s, testExe, helperArg, "forks", "64"); r.code() != 0 {
		t.Fatalf("control: without Nproc the run could not start 64 children: %v", r)
	}
	s.Nproc = 32
	r := run(t, &s, testExe, helperArg, "forks", "64")
	t.Log(strings.TrimSpace(r.out))
	var started int
	var rest string
	if _, err := fmt.Sscanf(r.out, "started %d: %s", &started, &rest); err != nil || r.code() != 1 ||
		started >= 32 || !strings.Contains(r.out, "resource temporarily unavailable") {
		t.Fatalf("under Nproc 32: %v", r)
	}
}
