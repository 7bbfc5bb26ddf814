package statustoken

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// Replicas of one config starting together agree on one token: none reads
// the file between another's create and its write.
func TestEnsureRacingReplicasAgree(t *testing.T) {
	for round := range 20 {
		path := filepath.Join(t.TempDir(), "r.status-token")
		const n = 8
		tokens := make(chan string, n)
		errs := make(chan error, n)
		var start sync.WaitGroup
		start.Add(1)
		for range n {
			go func() {
				start.Wait()
				tok, _, err := Ensure(path)
				tokens <- tok
				errs <- err
			}()
		}
		start.Done()
		var first string
		for range n {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: Ensure: %v", round, err)
			}
			tok := <-tokens
			if first == "" {
				first = tok
			}
			if tok != first {
				t.Fatalf("round %d: replicas got two tokens %q and %q", round, first, tok)
			}
		}
		entries, err := os.ReadDir(filepath.Dir(path))
		if err != nil || len(entries) != 1 {
			t.Fatalf("round %d: the directory holds %v (%v), want the token file alone", round, entries, err)
		}
	}
}

// Root running agentsmithctl reads the token file of the daemon's own user;
// the daemon (Read) still takes only its own.
func TestOperatorRootReadsTheDaemonsFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the file to another user")
	}
	path := filepath.Join(t.TempDir(), "d.status-token")
	tok, _, err := Ensure(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil {
		t.Fatal("Read took a file another user owns")
	}
	if got, err := ReadAsOperator(path); err != nil || got != tok {
		t.Fatalf("ReadAsOperator = %q, %v; want the token", got, err)
	}
}
