package gitws

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A git root another user owns, or that anyone may write, is refused
// before any git runs: whoever can write it can replace a ticket's git
// dir, whose config (a filter driver, core.sshCommand) the daemon's git
// runs with the daemon's rights. The default work_dir is under $TMPDIR,
// where a local user can make the parents first.
func TestAGitRootOthersCanWriteIsRefused(t *testing.T) {
	t.Parallel()
	bare := remote(t)
	r := newRepo(t, Config{URL: bare})
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, root string)
	}{
		{"mode 0777", func(t *testing.T, root string) {
			if err := os.Chmod(root, 0o777); err != nil {
				t.Fatal(err)
			}
		}},
		{"owned by another uid", func(t *testing.T, root string) {
			if os.Geteuid() != 0 {
				t.Skip("chown to another uid needs root")
			}
			if err := os.Chown(root, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
		{"git dir owned by another uid", func(t *testing.T, root string) {
			if os.Geteuid() != 0 {
				t.Skip("chown to another uid needs root")
			}
			git := filepath.Join(root, "app", "t")
			if err := os.MkdirAll(git, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(git, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "work-git")
			if err := os.Mkdir(root, 0o700); err != nil {
				t.Fatal(err)
			}
			c.setup(t, root)
			d := Dirs{Work: filepath.Join(base, "work", "app", "t"), Git: filepath.Join(root, "app", "t"), Root: root}
			for what, err := range map[string]error{
				"prepare": func() error { _, err := r.Prepare(ctx(t), d, "agent-smith/1"); return err }(),
				"save":    func() error { _, err := r.Save(ctx(t), d, "agent-smith/1", "m"); return err }(),
			} {
				if err == nil || !strings.Contains(err.Error(), "no one else may write") {
					t.Errorf("%s (%s): %v, want it refused", what, c.name, err)
				}
			}
			if _, err := os.Stat(filepath.Join(d.Git, "config")); !os.IsNotExist(err) {
				t.Errorf("the daemon wrote a config into a git dir others control: %v", err)
			}
		})
	}
}
