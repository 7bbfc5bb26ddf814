package gitws

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// With pipeline.run_as the pipeline's user owns the work tree and its own
// .git (made as that user), cannot read or write the daemon's git dir, and
// finds no credential in the environment of the git commands run as it.
func TestRunAsOwnsItsRepositoryNotTheDaemons(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("switching users needs root; run the tests as root to cover pipeline.run_as")
	}
	const branch, token = "agent-smith/40", "ghp_s3cr3t-token-value"
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	bare := remote(t)
	d := runAsDirs(t)
	r := newRepo(t, Config{URL: bare, Owner: nobody, Token: token})
	if _, err := r.Prepare(ctx(t), d, branch); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{d.Work, filepath.Join(d.Work, "README"), filepath.Join(d.Work, ".git"), filepath.Join(d.Work, ".git", "config")} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != nobody.Uid {
			t.Errorf("%s owned by uid %d, want the pipeline's %d", p, st.Uid, nobody.Uid)
		}
	}
	if fi, err := os.Stat(d.Git); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("git dir mode: %v %v", fi, err)
	}
	asNobody := func(args ...string) (string, error) {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = d.Work
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: nobody}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// The pipeline's git works in its own repository, on the branch.
	if out, err := asNobody("git", "rev-parse", "--abbrev-ref", "HEAD"); err != nil || strings.TrimSpace(out) != branch {
		t.Fatalf("the pipeline's git: %q %v", out, err)
	}
	if out, err := asNobody("cat", filepath.Join(d.Git, "config")); err == nil {
		t.Fatalf("the pipeline's user read the daemon's git config:\n%s", out)
	}
	if _, err := asNobody("touch", filepath.Join(d.Git, "commondir")); err == nil {
		t.Fatal("the pipeline's user wrote into the daemon's git dir")
	}
	for _, kv := range r.env {
		if strings.Contains(kv, token) || strings.Contains(kv, basicAuth(DefaultTokenUser, token)) {
			t.Fatalf("the credential is in the environment of git run as the pipeline: %s", kv)
		}
	}
	write(t, d.Work, "work.txt", "work\n")
	if _, err := r.Save(ctx(t), d, branch, "attempt 1"); err != nil {
		t.Fatal(err)
	}
	if got := run(t, bare, "show", branch+":work.txt"); got != "work" {
		t.Fatalf("remote work.txt = %q", got)
	}
}
