package gitws

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pushSecret is a project secret a pipeline writes where it should not.
const pushSecret = "ghp_PushS3cret/t0ken+42"

// scanned is a prepared work branch of a repo that knows pushSecret.
func scanned(t *testing.T, cfg Config) (r *Repo, d Dirs, bare, branch string) {
	t.Helper()
	branch = "agent-smith/7"
	bare = remote(t)
	cfg.URL, cfg.Secrets = bare, []string{pushSecret}
	r = newRepo(t, cfg)
	d = newDirs(t)
	if _, err := r.Prepare(ctx(t), d, branch); err != nil {
		t.Fatal(err)
	}
	return r, d, bare, branch
}

// refusedPush fails t unless err is a *SecretError whose message has
// want and no form of the secret, and the remote has neither the branch
// nor the daemon's local commit.
func refusedPush(t *testing.T, err error, d Dirs, bare, branch, want string) *SecretError {
	t.Helper()
	var se *SecretError
	if !errors.As(err, &se) {
		t.Fatalf("save: err = %v, want a refused push (*SecretError)", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, want) {
		t.Errorf("error %q does not say %q", msg, want)
	}
	for _, f := range []string{pushSecret, base64.StdEncoding.EncodeToString([]byte(pushSecret))} {
		if strings.Contains(msg, f) {
			t.Errorf("error %q shows the secret", msg)
		}
	}
	if out, err := exec.Command("git", "--git-dir", bare, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch).CombinedOutput(); err == nil {
		t.Errorf("the remote has the branch at %s", out)
	}
	head := run(t, d.Git, "--git-dir", d.Git, "rev-parse", "refs/heads/"+branch)
	if err := exec.Command("git", "--git-dir", bare, "cat-file", "-e", head).Run(); err == nil {
		t.Errorf("the remote has the refused commit %s", head)
	}
	return se
}

func TestSaveRefusesASecretInAFile(t *testing.T) {
	t.Parallel()
	r, d, bare, branch := scanned(t, Config{})
	if err := os.MkdirAll(filepath.Join(d.Work, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, d.Work, "config/token.txt", "token = "+pushSecret+"\n")
	_, err := r.Save(ctx(t), d, branch, "agent-smith attempt 1: succeeded")
	head := run(t, d.Git, "--git-dir", d.Git, "rev-parse", "--short=7", "refs/heads/"+branch)
	se := refusedPush(t, err, d, bare, branch, "commit "+head+" adds a secret in config/token.txt")
	if se.Path != "config/token.txt" || se.Commit != head {
		t.Errorf("SecretError = %+v", se)
	}
}

func TestSaveRefusesABase64Secret(t *testing.T) {
	t.Parallel()
	r, d, bare, branch := scanned(t, Config{})
	write(t, d.Work, "creds.b64", base64.StdEncoding.EncodeToString([]byte("user:"+pushSecret))+"\n")
	_, err := r.Save(ctx(t), d, branch, "agent-smith attempt 1: succeeded")
	refusedPush(t, err, d, bare, branch, "adds a secret in creds.b64")
}

func TestSaveRefusesASecretInTheCommitMessage(t *testing.T) {
	t.Parallel()
	r, d, bare, branch := scanned(t, Config{})
	write(t, d.Work, "notes.txt", "nothing to see\n")
	_, err := r.Save(ctx(t), d, branch, "[wip] agent-smith attempt 1: "+pushSecret)
	refusedPush(t, err, d, bare, branch, "has a secret in its message")
}

// A file whose name is the secret is refused and its name not shown.
func TestSaveRefusesASecretInAFileName(t *testing.T) {
	t.Parallel()
	r, d, bare, branch := scanned(t, Config{})
	write(t, d.Work, "ghp_PushS3cret%2Ft0ken%2B42", "x\n")
	_, err := r.Save(ctx(t), d, branch, "agent-smith attempt 1: succeeded")
	refusedPush(t, err, d, bare, branch, "adds a secret in a file name")
}

func TestSavePushesACleanCommit(t *testing.T) {
	t.Parallel()
	r, d, bare, branch := scanned(t, Config{})
	write(t, d.Work, "CHANGELOG.md", "- fixed, no token here\n")
	s, err := r.Save(ctx(t), d, branch, "agent-smith attempt 1: succeeded")
	if err != nil {
		t.Fatal(err)
	}
	if got := run(t, bare, "--git-dir", bare, "rev-parse", "refs/heads/"+branch); got != s.Head {
		t.Fatalf("remote at %s, want %s", got, s.Head)
	}
}

// A secret one attempt committed and the next removed is still in the
// history the push would send: refused, the first commit and its file
// named.
func TestSaveRefusesASecretRemovedInALaterCommit(t *testing.T) {
	t.Parallel()
	r, d, bare, branch := scanned(t, Config{})
	write(t, d.Work, "token.txt", pushSecret+"\n")
	_, err := r.Save(ctx(t), d, branch, "[wip] agent-smith attempt 1: failed")
	first := run(t, d.Git, "--git-dir", d.Git, "rev-parse", "--short=7", "refs/heads/"+branch)
	refusedPush(t, err, d, bare, branch, "adds a secret in token.txt")
	if err := os.Remove(filepath.Join(d.Work, "token.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, d.Work, "fix.txt", "clean\n")
	s, err := r.Save(ctx(t), d, branch, "agent-smith attempt 2: succeeded")
	if !s.Committed {
		t.Fatalf("the second save committed nothing: %+v", s)
	}
	refusedPush(t, err, d, bare, branch, "commit "+first+" adds a secret in token.txt")
}

// A binary blob larger than one chunk, the secret cut by the chunk
// boundary, is streamed and refused.
func TestSaveRefusesASecretAcrossTheScanChunk(t *testing.T) {
	t.Parallel()
	r, d, bare, branch := scanned(t, Config{})
	blob := bytes.Repeat([]byte{0, 0xff, 7}, (scanChunk+4096)/3)
	at := scanChunk - len(pushSecret)/2
	copy(blob[at:], pushSecret)
	if err := os.WriteFile(filepath.Join(d.Work, "model.bin"), blob, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := r.Save(ctx(t), d, branch, "agent-smith attempt 1: succeeded")
	refusedPush(t, err, d, bare, branch, "adds a secret in model.bin")
}

// A push with more to scan than ScanMaxBytes is refused, not sent
// unscanned.
func TestSaveRefusesAPushTooLargeToScan(t *testing.T) {
	t.Parallel()
	r, d, bare, branch := scanned(t, Config{ScanMaxBytes: 4096})
	write(t, d.Work, "big.txt", strings.Repeat("x", 8192))
	_, err := r.Save(ctx(t), d, branch, "agent-smith attempt 1: succeeded")
	if !errors.Is(err, ErrScanTooLarge) {
		t.Fatalf("err = %v, want ErrScanTooLarge", err)
	}
	if err := exec.Command("git", "--git-dir", bare, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch).Run(); err == nil {
		t.Error("the remote has the branch")
	}
}
