package gitws

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// run runs the real git binary for the test's own setup and inspection,
// with no credentials and hooks off.
func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t",
		"GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// remote is a real bare repository with one commit on main.
func remote(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	bare := filepath.Join(root, "origin.git")
	run(t, root, "init", "--quiet", "--bare", "--initial-branch=main", bare)
	seed := filepath.Join(root, "seed")
	run(t, root, "init", "--quiet", "--initial-branch=main", seed)
	write(t, seed, "README", "base\n")
	run(t, seed, "add", "README")
	run(t, seed, "commit", "--quiet", "-m", "base")
	run(t, seed, "push", "--quiet", bare, "main")
	return bare
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

func newRepo(t *testing.T, cfg Config) *Repo {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// A failed attempt's work is on the branch; the next attempt, on another
// replica with another working directory, starts from it; its success
// leaves the branch, base-rooted, ready for a pull request.
func TestFailedAttemptResumesOnAnotherReplica(t *testing.T) {
	t.Parallel()
	bare := remote(t)
	r := newRepo(t, Config{URL: bare})
	branch, err := r.Branch("owner/repo#12")
	if err != nil {
		t.Fatal(err)
	}
	if branch != "agent-smith/owner-repo-12" {
		t.Fatalf("branch = %q", branch)
	}
	dirA := newDirs(t)
	p, err := r.Prepare(ctx(t), dirA, branch)
	if err != nil {
		t.Fatal(err)
	}
	if p.Resumed {
		t.Fatal("first attempt reported resumed")
	}
	write(t, dirA.Work, "work.txt", "half done\n")
	if err := os.MkdirAll(filepath.Join(dirA.Work, ".agentsmith", "logs"), 0o750); err != nil {
		t.Fatal(err)
	}
	write(t, dirA.Work, ".agentsmith-result.json", `{"summary":"x"}`)
	s, err := r.Save(ctx(t), dirA, branch, "[wip] agent-smith attempt 1: exit status 1")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Committed {
		t.Fatal("nothing committed")
	}
	if got := run(t, bare, "log", "-1", "--format=%s", branch); got != "[wip] agent-smith attempt 1: exit status 1" {
		t.Fatalf("remote branch head = %q", got)
	}
	if got := run(t, bare, "show", branch+":work.txt"); got != "half done" {
		t.Fatalf("remote work.txt = %q", got)
	}
	if files := run(t, bare, "ls-tree", "--name-only", branch); strings.Contains(files, ".agentsmith") {
		t.Fatalf("the daemon's own files were committed: %s", files)
	}

	dirB := newDirs(t)
	p, err = r.Prepare(ctx(t), dirB, branch)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Resumed || p.Head != s.Head {
		t.Fatalf("second attempt: resumed=%v head=%s, want resumed at %s", p.Resumed, p.Head, s.Head)
	}
	if got := read(t, dirB.Work, "work.txt"); got != "half done\n" {
		t.Fatalf("replica B starts from %q", got)
	}
	write(t, dirB.Work, "work.txt", "done\n")
	if _, err := r.Save(ctx(t), dirB, branch, "agent-smith attempt 2: succeeded"); err != nil {
		t.Fatal(err)
	}
	if got := run(t, bare, "show", branch+":work.txt"); got != "done" {
		t.Fatalf("remote after success = %q", got)
	}
	// Pull-request ready: main is an ancestor, both attempts are history.
	run(t, bare, "merge-base", "--is-ancestor", "main", branch)
	if n := run(t, bare, "rev-list", "--count", "main.."+branch); n != "2" {
		t.Fatalf("commits on the branch over main = %s, want 2", n)
	}
}

// A kill -9 between two saves keeps exactly the last pushed commit for the
// next replica; what the dead one changed after it is not on the branch.
func TestKillKeepsLastPushedCommit(t *testing.T) {
	t.Parallel()
	bare := remote(t)
	r := newRepo(t, Config{URL: bare})
	dirA := newDirs(t)
	if _, err := r.Prepare(ctx(t), dirA, "agent-smith/7"); err != nil {
		t.Fatal(err)
	}
	write(t, dirA.Work, "a.txt", "saved\n")
	saved, err := r.Save(ctx(t), dirA, "agent-smith/7", "[wip] agent-smith attempt 1: timeout")
	if err != nil {
		t.Fatal(err)
	}
	write(t, dirA.Work, "a.txt", "lost with the replica\n") // no Save: the process died
	dirB := newDirs(t)
	p, err := r.Prepare(ctx(t), dirB, "agent-smith/7")
	if err != nil {
		t.Fatal(err)
	}
	if p.Head != saved.Head || read(t, dirB.Work, "a.txt") != "saved\n" {
		t.Fatalf("replica B at %s with %q, want %s with the saved file", p.Head, read(t, dirB.Work, "a.txt"), saved.Head)
	}
	// The dead replica's own directory, prepared again, keeps its
	// uncommitted change: its branch still contains origin's commit.
	p, err = r.Prepare(ctx(t), dirA, "agent-smith/7")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Resumed || read(t, dirA.Work, "a.txt") != "lost with the replica\n" {
		t.Fatalf("kept dir lost its local change: %q", read(t, dirA.Work, "a.txt"))
	}
}

// Two runs pushing the same branch: the later push is rejected, fetched,
// merged and pushed again; the earlier commit stays (no force).
func TestRejectedPushIsMergedNeverForced(t *testing.T) {
	t.Parallel()
	bare := remote(t)
	r := newRepo(t, Config{URL: bare})
	dirA, dirB := newDirs(t), newDirs(t)
	for _, d := range []Dirs{dirA, dirB} {
		if _, err := r.Prepare(ctx(t), d, "agent-smith/9"); err != nil {
			t.Fatal(err)
		}
	}
	write(t, dirA.Work, "a.txt", "a\n")
	a, err := r.Save(ctx(t), dirA, "agent-smith/9", "a")
	if err != nil {
		t.Fatal(err)
	}
	write(t, dirB.Work, "b.txt", "b\n")
	b, err := r.Save(ctx(t), dirB, "agent-smith/9", "b")
	if err != nil {
		t.Fatal(err)
	}
	if b.Merged != 1 {
		t.Fatalf("merged rounds = %d, want 1", b.Merged)
	}
	run(t, bare, "merge-base", "--is-ancestor", a.Head, "agent-smith/9")
	if run(t, bare, "show", "agent-smith/9:a.txt") != "a" || run(t, bare, "show", "agent-smith/9:b.txt") != "b" {
		t.Fatal("one run's work is missing from the branch")
	}
	// A conflicting change gives up with an error, and the remote keeps
	// what it had.
	write(t, dirA.Work, "b.txt", "conflict\n")
	before := run(t, bare, "rev-parse", "agent-smith/9")
	if _, err := r.Save(ctx(t), dirA, "agent-smith/9", "conflicting"); err == nil || !strings.Contains(err.Error(), "does not merge") {
		t.Fatalf("conflicting save: %v", err)
	}
	if after := run(t, bare, "rev-parse", "agent-smith/9"); after != before {
		t.Fatal("a conflicting push moved the branch")
	}
}

// The pipeline owns the working directory; what it writes into .git/config
// cannot send the push (and the credential) elsewhere, and its hooks do
// not run.
func TestPipelineCannotRedirectThePush(t *testing.T) {
	t.Parallel()
	bare := remote(t)
	evil := filepath.Join(t.TempDir(), "evil.git")
	run(t, filepath.Dir(evil), "init", "--quiet", "--bare", evil)
	r := newRepo(t, Config{URL: bare})
	dir := newDirs(t)
	if _, err := r.Prepare(ctx(t), dir, "agent-smith/3"); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir.Work, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("[url \"" + evil + "\"]\n\tinsteadOf = " + bare + "\n[remote \"origin\"]\n\tpushurl = " + evil + "\n")
	_ = f.Close()
	marker := filepath.Join(t.TempDir(), "hook-ran")
	if err := os.MkdirAll(filepath.Join(dir.Work, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir.Work, ".git", "hooks"), "pre-push", "#!/bin/sh\ntouch "+marker+"\n")
	_ = os.Chmod(filepath.Join(dir.Work, ".git", "hooks", "pre-push"), 0o755)
	write(t, dir.Work, "x.txt", "x\n")
	if _, err := r.Save(ctx(t), dir, "agent-smith/3", "x"); err != nil {
		t.Fatal(err)
	}
	if run(t, bare, "show", "agent-smith/3:x.txt") != "x" {
		t.Fatal("the push did not reach the configured remote")
	}
	if refs := run(t, evil, "for-each-ref"); refs != "" {
		t.Fatalf("the push went to the pipeline's remote: %s", refs)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the pipeline's pre-push hook ran")
	}
}

// Over HTTPS the token goes in an Authorization header from git's
// environment: the real git and a real smart-HTTP server (git
// http-backend) see it, .git/config never holds it, and a refused
// credential's error message does not show it.
func TestTokenOverHTTPStaysOutOfConfigAndErrors(t *testing.T) {
	t.Parallel()
	bare := remote(t)
	const token = "ghp_s3cr3t-token-value"
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(DefaultTokenUser+":"+token))
	execPath := run(t, t.TempDir(), "--exec-path")
	backend := &cgi.Handler{Path: filepath.Join(execPath, "git-http-backend"),
		Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(bare), "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=agent"}}
	var sawAuth bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != want {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		sawAuth = true
		backend.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	// http-backend refuses pushes unless receive-pack is enabled.
	run(t, bare, "config", "http.receivepack", "true")
	url := srv.URL + "/" + filepath.Base(bare)

	r := newRepo(t, Config{URL: url, Token: token})
	dir := newDirs(t)
	if _, err := r.Prepare(ctx(t), dir, "agent-smith/5"); err != nil {
		t.Fatal(err)
	}
	write(t, dir.Work, "y.txt", "y\n")
	if _, err := r.Save(ctx(t), dir, "agent-smith/5", "y"); err != nil {
		t.Fatal(err)
	}
	if !sawAuth || run(t, bare, "show", "agent-smith/5:y.txt") != "y" {
		t.Fatal("push over HTTP with the token did not land")
	}
	for _, cfg := range []string{read(t, dir.Work, ".git/config"), read(t, dir.Git, "config")} {
		if strings.Contains(cfg, token) || strings.Contains(cfg, want[len("Basic "):]) {
			t.Fatalf("a git config holds the credential:\n%s", cfg)
		}
	}

	// git prints the URL it failed on; here it carries the (wrong) token,
	// which Scrub must take out of the message.
	wrong := token + "-wrong"
	bad := newRepo(t, Config{URL: url + "?" + wrong, Token: wrong})
	_, err := bad.Prepare(ctx(t), newDirs(t), "agent-smith/5")
	if err == nil {
		t.Fatal("a wrong token fetched")
	}
	if strings.Contains(err.Error(), wrong) || !strings.Contains(err.Error(), "[REDACTED]") {
		t.Fatalf("error shows the token: %v", err)
	}
}

// A stopped context stops git; Prepare reports it instead of hanging.
func TestCancelledContextStopsGit(t *testing.T) {
	t.Parallel()
	bare := remote(t)
	r := newRepo(t, Config{URL: bare})
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Prepare(c, newDirs(t), "agent-smith/1"); err == nil {
		t.Fatal("prepare under a cancelled context succeeded")
	}
}

func TestNewRefusesCredentialsInTheURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"https://x:ghp_abc@github.com/o/r.git", "-uhttps://x", "ftp://h/r"} {
		if _, err := New(Config{URL: u}); err == nil {
			t.Errorf("New accepted %q", u)
		} else if strings.Contains(err.Error(), "ghp_abc") {
			t.Errorf("error shows the password: %v", err)
		}
	}
	if _, err := New(Config{URL: "https://h/r.git", Branch: "agent-smith/../{ticket}"}); err == nil {
		t.Error("New accepted a template with ..")
	}
}

// The pipeline's own .git is a repository on the work branch with origin's
// URL: a pipeline that commits and pushes itself (examples/pipelines) keeps
// its commit on the branch as it is, with no second commit or merge.
func TestPipelinesOwnPushIsKept(t *testing.T) {
	t.Parallel()
	const branch = "agent-smith/41"
	bare := remote(t)
	r := newRepo(t, Config{URL: bare})
	d := newDirs(t)
	p, err := r.Prepare(ctx(t), d, branch)
	if err != nil {
		t.Fatal(err)
	}
	if got := run(t, d.Work, "rev-parse", "--abbrev-ref", "HEAD"); got != branch {
		t.Fatalf("the pipeline's repository is on %q", got)
	}
	write(t, d.Work, "CHANGELOG.md", "- fixed\n")
	write(t, d.Work, ".agentsmith-result.json", "{}")
	run(t, d.Work, "add", "-A")
	if st := run(t, d.Work, "status", "--porcelain"); strings.Contains(st, ".agentsmith") {
		t.Fatalf("the daemon's files are not excluded in the pipeline's repository: %s", st)
	}
	run(t, d.Work, "commit", "--quiet", "-m", "the pipeline's own commit")
	run(t, d.Work, "push", "--quiet", "origin", "HEAD:refs/heads/"+branch)
	mine := run(t, d.Work, "rev-parse", "HEAD")
	s, err := r.Save(ctx(t), d, branch, "agent-smith attempt 1: succeeded")
	if err != nil {
		t.Fatal(err)
	}
	if s.Committed || s.Merged != 0 || s.Head != mine {
		t.Fatalf("save: %+v, want the pipeline's commit %s as it is", s, mine)
	}
	if got := run(t, bare, "rev-list", "--count", p.Head+".."+branch); got != "1" {
		t.Fatalf("commits over the prepared head = %s", got)
	}
}
