package owndir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnsureMakesAndChecksTheDaemonsDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "root")
	if err := Ensure(dir, 0o700); err != nil {
		t.Fatalf("a new directory: %v", err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("made %v, %v; want 0700", fi, err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := Ensure(dir, 0o700); err == nil || !strings.Contains(err.Error(), "no one else may write") {
		t.Errorf("mode 0777: %v, want it refused", err)
	}
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := Check(dir); err != nil {
		t.Errorf("mode 0750: %v", err)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Check(file); err == nil {
		t.Error("a file passed as a directory")
	}
	if os.Geteuid() != 0 {
		t.Skip("chown to another uid needs root")
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := Check(dir); err == nil || !strings.Contains(err.Error(), "owner uid 65534") {
		t.Errorf("owned by uid 65534: %v, want it refused", err)
	}
}
