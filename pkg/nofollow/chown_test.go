//go:build linux

package nofollow

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

const nobody = 65534

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("chown to another user needs root")
	}
}

func owner(t *testing.T, p string) int {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Sys().(*syscall.Stat_t).Uid)
}

func write(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A pipeline's tree holds links to files and directories outside it and a
// hard link to a root-only file: the walk chowns the tree's own files and
// the links themselves, never what they lead to.
func TestChownTreeNeverChownsOutsideTheTree(t *testing.T) {
	t.Parallel()
	needRoot(t)
	tree, out := filepath.Join(t.TempDir(), "work"), t.TempDir()
	s, inDir := filepath.Join(out, "shadow"), filepath.Join(out, "etc", "passwd")
	write(t, s)
	write(t, inDir)
	write(t, filepath.Join(tree, "src", "main.go"))
	for link, target := range map[string]string{"src/shadow": s, "etc": filepath.Dir(inDir)} {
		if err := os.Symlink(target, filepath.Join(tree, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(s, filepath.Join(tree, "hard")); err != nil {
		t.Fatal(err)
	}
	if err := ChownTree(tree, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{s, inDir, filepath.Dir(inDir)} {
		if got := owner(t, p); got != 0 {
			t.Errorf("%s outside the tree chowned to %d", p, got)
		}
	}
	for _, p := range []string{tree, filepath.Join(tree, "src"), filepath.Join(tree, "src", "main.go"),
		filepath.Join(tree, "src", "shadow"), filepath.Join(tree, "etc")} {
		if got := owner(t, p); got != nobody {
			t.Errorf("%s in the tree owned by %d, want %d", p, got, nobody)
		}
	}
}

// The walk races a pipeline that swaps a directory for a link to a
// root-only directory: once between listing the parent and entering the
// directory, once after the directory's entries were listed (where a walk
// that chowns by full path re-resolves the swapped name and chowns the
// link's target). The hook makes each window certain.
func TestChownTreeSurvivesADirectorySwappedForALink(t *testing.T) {
	needRoot(t)
	for _, window := range []string{"before entering", "after listing"} {
		t.Run(window, func(t *testing.T) {
			tree, out := filepath.Join(t.TempDir(), "work"), t.TempDir()
			write(t, filepath.Join(tree, "a", "shadow"))
			write(t, filepath.Join(out, "shadow"))
			swapAt := tree
			if window == "after listing" {
				swapAt = filepath.Join(tree, "a")
			}
			afterList = func(dir string) {
				if dir != swapAt {
					return
				}
				if err := os.Rename(filepath.Join(tree, "a"), filepath.Join(tree, "moved")); err != nil {
					t.Error(err)
				}
				if err := os.Symlink(out, filepath.Join(tree, "a")); err != nil {
					t.Error(err)
				}
			}
			t.Cleanup(func() { afterList = nil })
			if err := ChownTree(tree, nobody, nobody); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{out, filepath.Join(out, "shadow")} {
				if got := owner(t, p); got != 0 {
					t.Errorf("%s outside the tree chowned to %d", p, got)
				}
			}
			// What the walk chowns instead: the link it met in place of
			// the directory, or the directory it had entered, where it
			// went.
			mine := filepath.Join(tree, "a")
			if window == "after listing" {
				mine = filepath.Join(tree, "moved", "shadow")
			}
			if got := owner(t, mine); got != nobody {
				t.Errorf("%s owned by %d, want %d", mine, got, nobody)
			}
		})
	}
}
