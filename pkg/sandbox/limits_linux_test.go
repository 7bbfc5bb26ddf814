package sandbox

import (
	"fmt"
	"os/exec"
	"strconv"
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

// TestTmpSize: under TmpSize 1 MiB, writing 2 MiB to /tmp or /dev/shm
// fails with ENOSPC, while 512 KiB fits. Control: the same spec without
// TmpSize takes the 2 MiB.
func TestTmpSize(t *testing.T) {
	s := newSpec(t, reachableDir(t), "run")
	const size = 1 << 20
	for _, dir := range []string{"/tmp", "/dev/shm"} {
		if r := run(t, &s, testExe, helperArg, "fill", dir+"/big", strconv.Itoa(2*size)); r.code() != 0 {
			t.Fatalf("control: without TmpSize 2 MiB did not fit in %s: %v", dir, r)
		}
	}
	s.TmpSize = size
	for _, dir := range []string{"/tmp", "/dev/shm"} {
		if r := run(t, &s, testExe, helperArg, "fill", dir+"/small", strconv.Itoa(size/2)); r.code() != 0 {
			t.Errorf("512 KiB in %s under TmpSize 1 MiB: %v", dir, r)
		}
		r := run(t, &s, testExe, helperArg, "fill", dir+"/big", strconv.Itoa(2*size))
		t.Logf("%s: %s", dir, strings.TrimSpace(r.out))
		if r.code() != 1 || !strings.Contains(r.out, "ENOSPC") {
			t.Errorf("2 MiB in %s under TmpSize 1 MiB: %v", dir, r)
		}
	}
	s.TmpSize = -1
	if _, err := Prepare(exec.Command("/bin/true"), testExe, s); err == nil {
		t.Error("Prepare took a negative TmpSize")
	}
}
