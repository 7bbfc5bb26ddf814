package sandbox

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ReachableExe returns a path to exe that any uid may execute: exe itself
// when it and every directory above it let others in (an installed
// binary), or else a copy in a new directory below dir ("" for the system
// temp dir), owned by the caller and writable by nobody else. A sandbox's
// init starts as the run's uid, which cannot pass the 0700 directories
// `go build`, `go run` and `go test` put binaries in. remove deletes the
// copy (a no-op for exe itself).
func ReachableExe(exe, dir string) (path string, remove func(), err error) {
	if othersMayRun(exe) {
		return exe, func() {}, nil
	}
	tmp, err := os.MkdirTemp(dir, "agentsmithd-init-")
	if err != nil {
		return "", nil, fmt.Errorf("sandbox: a directory for the init binary: %w", err)
	}
	remove = func() { _ = os.RemoveAll(tmp) }
	fail := func(err error) (string, func(), error) {
		remove()
		return "", nil, fmt.Errorf("sandbox: copy the init binary: %w", err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fail(err)
	}
	if !othersMayRun(tmp) {
		return fail(fmt.Errorf("%s: its parent directories do not let others in", tmp))
	}
	in, err := os.Open(exe)
	if err != nil {
		return fail(err)
	}
	defer in.Close()
	path = filepath.Join(tmp, filepath.Base(exe))
	out, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return fail(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fail(err)
	}
	if err := out.Close(); err != nil {
		return fail(err)
	}
	return path, remove, nil
}

// othersMayRun reports whether a uid other than the owner may reach path:
// path itself has others' execute bit and every directory above it lets
// others search it.
func othersMayRun(path string) bool { return Unreachable(path) == "" }

// Unreachable names the first of path and the directories above it that
// does not let others pass (no o+x, or missing), "" when none: a run's
// uid, which is no one's, must pass them all to reach path, as its work
// dir, its pipeline's directory and the init binary must be reached.
func Unreachable(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	var blocked string
	for p := abs; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			blocked = p
		}
		if p == filepath.Dir(p) {
			return blocked
		}
	}
}
