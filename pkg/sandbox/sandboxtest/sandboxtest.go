// Package sandboxtest gives tests what a sandboxed run needs here: the
// test binary as the sandbox's init (its TestMain dispatches
// sandbox.InitArg), a host uid of the run's own, and a work dir that uid
// owns and may reach. Where the machine cannot start a sandbox, the test
// is skipped with what is missing.
package sandboxtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentsmithd/agentsmithd/pkg/sandbox"
)

// Exe is the test binary where every uid may run it, as a sandbox's init;
// it skips t where no sandbox starts.
func Exe(t testing.TB) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe, remove, err := sandbox.ReachableExe(self, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
	if err := sandbox.Available(exe); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	return exe
}

// Spec is a sandbox for one run: a leased host uid (the test's own when it
// is not root), a work dir that uid owns below a directory it may pass,
// the system directories read-only.
func Spec(t testing.TB) *sandbox.Spec {
	t.Helper()
	uid := uint32(os.Getuid())
	if uid == 0 {
		l, err := sandbox.LeaseUID(sandbox.DefaultRange, t.Name())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Release() })
		uid = l.UID()
	}
	gid := uid
	if os.Getuid() != 0 {
		gid = uint32(os.Getgid())
	}
	wd := filepath.Join(ReachableDir(t), "work")
	for _, err := range []error{os.Mkdir(wd, 0o700), os.Chown(wd, int(uid), int(gid))} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return &sandbox.Spec{HostUID: uid, HostGID: gid, WorkDir: wd, ReadOnly: sandbox.DefaultReadOnly()}
}

// ReachableDir is a new directory every uid may pass through (t.TempDir's
// parents are 0700), removed when t ends.
func ReachableDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "sandboxtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	if err := os.Chmod(d, 0o711); err != nil {
		t.Fatal(err)
	}
	return d
}
