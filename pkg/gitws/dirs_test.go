package gitws

import (
	"context"
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
