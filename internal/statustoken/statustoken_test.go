package statustoken

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPathIsBesideTheConfig(t *testing.T) {
	if got := Path("/etc/agentsmithd/agentsmithd.yaml"); got != "/etc/agentsmithd/agentsmithd.status-token" {
		t.Fatalf("Path = %q", got)
	}
	if got := Path("cfg"); got != "cfg.status-token" {
		t.Fatalf("Path = %q", got)
	}
}

func TestEnsureCreatesOnceOwnerOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.status-token")
	tok, created, err := Ensure(path)
	if err != nil || !created || len(tok) != 64 {
		t.Fatalf("Ensure = %q, %v, %v; want a new 64-digit token", tok, created, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, %v; want 0600", fi.Mode(), err)
	}
	again, created, err := Ensure(path)
	if err != nil || created || again != tok {
		t.Fatalf("second Ensure = %q, %v, %v; want the same token, not created", again, created, err)
	}
	if got, err := Read(path); err != nil || got != tok {
		t.Fatalf("Read = %q, %v", got, err)
	}
}

// A planted file, or a symlink to one, is never taken as the token: whoever
// can write the config's directory must not choose the token.
func TestReadRefusesPlantedFiles(t *testing.T) {
	dir := t.TempDir()
	token := strings.Repeat("a", 64)
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte(token), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(open); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("Read of a 0644 file = %v, want refused", err)
	}
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(link); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("Read through a symlink = %v, want refused", err)
	}
	if _, _, err := Ensure(link); err == nil {
		t.Error("Ensure through a symlink succeeded")
	}
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Ensure(dangling); err == nil {
		t.Error("Ensure through a dangling symlink succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); !os.IsNotExist(err) {
		t.Errorf("Ensure wrote through the dangling symlink: %v", err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(short); err == nil {
		t.Error("Read of a one-character token succeeded")
	}
}
