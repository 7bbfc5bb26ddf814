package gitws

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Between two attempts the work tree holds a link and a hard link to a
// root-only file outside it (a hard link as a pipeline makes one where
// fs.protected_hardlinks is off). Handing the tree to the pipeline's user
// again chowns neither that file nor anything through the link.
func TestPrepareNeverHandsOverAFileOutsideTheTree(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("chown to the pipeline's user needs root")
	}
	owner := &syscall.Credential{Uid: 65534, Gid: 65534}
	r := newRepo(t, Config{URL: remote(t), Owner: owner})
	branch, err := r.Branch("owner/repo#7")
	if err != nil {
		t.Fatal(err)
	}
	d := runAsDirs(t)
	dir := d.Work
	if _, err := r.Prepare(ctx(t), d, branch); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "shadow")
	write(t, filepath.Dir(secret), "shadow", "root only\n")
	if err := os.Symlink(secret, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(dir, "hard")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Prepare(ctx(t), d, branch); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(secret)
	if err != nil {
		t.Fatal(err)
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != 0 {
		t.Fatalf("the root-only file outside the tree was handed to uid %d", uid)
	}
	fi, err = os.Lstat(filepath.Join(dir, "README"))
	if err != nil || fi.Sys().(*syscall.Stat_t).Uid != owner.Uid {
		t.Fatalf("the tree's own file is not the pipeline's: %v %v", fi, err)
	}
}
