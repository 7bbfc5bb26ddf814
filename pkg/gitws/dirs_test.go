package gitws

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// newDirs is a work dir and, beside it, the daemon's git dir.
func newDirs(t *testing.T) Dirs {
	root := t.TempDir()
	return Dirs{Work: filepath.Join(root, "work"), Git: filepath.Join(root, "git")}
}

// prepare and save are the attack tests' way to Prepare and Save, so the
// same tests run against an earlier layout with a one-file shim.
func prepare(c context.Context, r *Repo, d Dirs, branch string) (Prepared, error) {
	return r.Prepare(c, d, branch)
}

func save(c context.Context, r *Repo, d Dirs, branch, msg string) (Saved, error) {
	return r.Save(c, d, branch, msg)
}

// runAsDirs is newDirs where the pipeline's user can reach its work dir,
// as lifecycle's handOver makes it (search permission on the parents).
func runAsDirs(t *testing.T) Dirs {
	t.Helper()
	root := t.TempDir()
	for _, p := range []string{filepath.Dir(root), root} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return Dirs{Work: filepath.Join(root, "work"), Git: filepath.Join(root, "git", "t")}
}
