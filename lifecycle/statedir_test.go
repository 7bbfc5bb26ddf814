package lifecycle

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentsmithd/agentsmithd/pkg/owndir"
)

// TestDefaultWorkRootFollowsTheStateDirRule checks each branch of the rule
// with the environment set by the test: systemd's StateDirectory= first,
// then the XDG state dir for a user other than root, then /var/lib.
func TestDefaultWorkRootFollowsTheStateDirRule(t *testing.T) {
	home := t.TempDir()
	for _, tc := range []struct {
		name                string
		stateDirectory, xdg string
		euid                int
		want                string
	}{
		{"systemd", "/var/lib/agentsmithd", "/x/state", 1000, "/var/lib/agentsmithd/work"},
		{"systemd, several dirs", "/var/lib/a:/var/lib/b", "", 0, "/var/lib/a/work"},
		{"systemd as root", "/var/lib/agentsmithd", "", 0, "/var/lib/agentsmithd/work"},
		{"user, XDG_STATE_HOME", "", "/x/state", 1000, "/x/state/agentsmithd/work"},
		{"user, relative XDG_STATE_HOME is ignored", "", "state", 1000, filepath.Join(home, ".local/state/agentsmithd/work")},
		{"user, no XDG_STATE_HOME", "", "", 1000, filepath.Join(home, ".local/state/agentsmithd/work")},
		{"root without systemd", "", "/x/state", 0, "/var/lib/agentsmithd/work"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("STATE_DIRECTORY", tc.stateDirectory)
			t.Setenv("XDG_STATE_HOME", tc.xdg)
			t.Setenv("HOME", home)
			if got := defaultWorkRoot(os.Getenv, tc.euid); got != tc.want {
				t.Errorf("defaultWorkRoot = %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("user without a home", func(t *testing.T) {
		t.Setenv("STATE_DIRECTORY", "")
		t.Setenv("XDG_STATE_HOME", "")
		t.Setenv("HOME", "")
		if got := defaultWorkRoot(os.Getenv, 1000); got != "/var/lib/agentsmithd/work" {
			t.Errorf("defaultWorkRoot = %q", got)
		}
	})
}

// TestDefaultWorkRootIsCreatedAsTheDaemonKeepsIt creates the default work
// root's logs root and git root as the consumer does, in a state dir that
// does not exist yet, and checks they pass pkg/owndir: the parents the
// daemon creates on the way are its own and nobody else's to write.
func TestDefaultWorkRootIsCreatedAsTheDaemonKeepsIt(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	t.Setenv("STATE_DIRECTORY", "")
	t.Setenv("XDG_STATE_HOME", state)
	root := defaultWorkRoot(os.Getenv, 1000)
	if root != filepath.Join(state, "agentsmithd", "work") {
		t.Fatalf("work root %s is not under XDG_STATE_HOME %s", root, state)
	}
	if err := OwnLogsRoot(DefaultLogsDir(root)); err != nil {
		t.Fatal(err)
	}
	if err := owndir.Ensure(GitRoot(root), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(root, 0o750); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]os.FileMode{
		filepath.Dir(root): 0o750, DefaultLogsDir(root): 0o750, GitRoot(root): 0o700, root: 0o750,
	} {
		if err := owndir.Check(dir); err != nil {
			t.Error(err)
		}
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got&^want != 0 {
			t.Errorf("%s has mode %v, want at most %v", dir, got, want)
		}
	}
}
