// Package gitws keeps a ticket's work on a git branch so it survives the
// attempt that made it (seed: Branch Persistence): before a run the ticket's
// working directory is brought to the branch's last pushed commit (or made
// from the base branch), after a run everything in it is committed and
// pushed. A run that moves to another replica starts from that commit.
//
// Git runs as a child process with a context. Credentials reach git only
// through its environment (http.extraHeader from GIT_CONFIG_*, or
// GIT_SSH_COMMAND with a key file): never on its command line, never in the
// remote URL written to .git/config, and every error is scrubbed of them.
// The working directory belongs to the pipeline, which is not trusted with
// the credentials: before each git command the daemon rewrites .git/config
// (dropping url.*.insteadOf, credential helpers, proxies, includes, filter
// drivers the pipeline may have added) and turns hooks and fsmonitor off,
// so nothing in the directory can redirect the push or run a command
// with the token in its environment.
package gitws

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/nofollow"
)

// Defaults for zero Config fields.
const (
	DefaultBase        = "main"
	DefaultBranch      = "agent-smith/" + TicketPlaceholder
	DefaultTimeout     = 5 * time.Minute
	DefaultTokenUser   = "x-access-token"
	DefaultAuthorName  = "agent-smith"
	DefaultAuthorEmail = "agent-smith@localhost"
	// DefaultPushTries bounds the fetch, merge and push-again rounds when a
	// push is rejected because the branch moved meanwhile.
	DefaultPushTries = 3
)

// maxStderr bounds the git output kept for an error message.
const maxStderr = 2048

// Config configures the work branch of one project.
type Config struct {
	// URL is the remote (https://, ssh://, scp-like user@host:path, or a
	// local path / file:// for tests). It must not carry a password.
	URL string
	// Base is the branch a new work branch starts from (DefaultBase).
	Base string
	// Branch is the work branch's template (DefaultBranch).
	Branch string
	// Token, when set, is sent as HTTP Basic auth (TokenUser:Token) in an
	// http.extraHeader given to git through its environment.
	Token     string
	TokenUser string
	// SSHKeyFile, when set, is the private key ssh uses (IdentitiesOnly).
	SSHKeyFile string
	// Timeout bounds each of Prepare and Save (DefaultTimeout).
	Timeout time.Duration
	// Git is the git binary (default "git" on PATH).
	Git                     string
	AuthorName, AuthorEmail string
	// Owner, when set, is given the working tree after Prepare (the
	// pipeline runs as that user: pipeline.run_as).
	Owner *syscall.Credential
	// PushTries: DefaultPushTries when 0.
	PushTries int
}

// Repo performs the work-branch operations of one project. Safe for
// concurrent use on different directories.
type Repo struct {
	cfg     Config
	secrets []string // scrubbed from every message
	env     []string
}

// New validates cfg and fills its defaults.
func New(cfg Config) (*Repo, error) {
	if cfg.URL == "" {
		return nil, errors.New("gitws: url is required")
	}
	if err := CheckURL(cfg.URL); err != nil {
		return nil, err
	}
	setDefault(&cfg.Base, DefaultBase)
	setDefault(&cfg.Branch, DefaultBranch)
	setDefault(&cfg.TokenUser, DefaultTokenUser)
	setDefault(&cfg.Git, "git")
	setDefault(&cfg.AuthorName, DefaultAuthorName)
	setDefault(&cfg.AuthorEmail, DefaultAuthorEmail)
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.PushTries <= 0 {
		cfg.PushTries = DefaultPushTries
	}
	if err := CheckRefFormat(cfg.Base); err != nil {
		return nil, fmt.Errorf("gitws: base: %w", err)
	}
	if _, err := BranchName(cfg.Branch, "1"); err != nil {
		return nil, fmt.Errorf("gitws: branch template: %w", err)
	}
	if cfg.Token != "" && cfg.SSHKeyFile != "" {
		return nil, errors.New("gitws: set a token or an ssh key, not both")
	}
	r := &Repo{cfg: cfg}
	r.env = r.buildEnv()
	return r, nil
}

func setDefault(s *string, d string) {
	if *s == "" {
		*s = d
	}
}

// CheckURL refuses a remote URL that carries a password or token (it would
// be written to .git/config and shown in git's messages) or an option-like
// value git could read as a flag.
func CheckURL(raw string) error {
	if strings.HasPrefix(raw, "-") || strings.ContainsAny(raw, "\x00\n\r") {
		return errors.New("gitws: url: not a git URL")
	}
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			return errors.New("gitws: url: does not parse")
		}
		if _, ok := u.User.Password(); ok {
			return errors.New("gitws: url: must not carry a password; use token_env, token_file or ssh_key_file")
		}
		switch u.Scheme {
		case "https", "http", "ssh", "file", "git":
		default:
			return fmt.Errorf("gitws: url: scheme %q not supported", u.Scheme)
		}
	}
	return nil
}

// Branch is the work branch of ticketID.
func (r *Repo) Branch(ticketID string) (string, error) { return BranchName(r.cfg.Branch, ticketID) }

// buildEnv is git's whole environment: a few of the daemon's variables,
// prompts off, and the overrides that outrank anything in the repository's
// own config. The credential is here and nowhere else.
func (r *Repo) buildEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TZ", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR", "HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	// C locale: rejected reads git's English messages.
	env = append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=true", "SSH_ASKPASS=true", "GCM_INTERACTIVE=never",
		"GIT_AUTHOR_NAME="+r.cfg.AuthorName, "GIT_AUTHOR_EMAIL="+r.cfg.AuthorEmail,
		"GIT_COMMITTER_NAME="+r.cfg.AuthorName, "GIT_COMMITTER_EMAIL="+r.cfg.AuthorEmail)
	kv := [][2]string{
		{"core.hooksPath", "/dev/null"},
		{"core.fsmonitor", "false"},
		{"safe.directory", "*"},
		{"credential.helper", ""},
		{"gc.auto", "0"},
		{"commit.gpgSign", "false"},
	}
	if r.cfg.Token != "" {
		basic := base64.StdEncoding.EncodeToString([]byte(r.cfg.TokenUser + ":" + r.cfg.Token))
		kv = append(kv, [2]string{"http.extraHeader", "Authorization: Basic " + basic})
		r.secrets = append(r.secrets, r.cfg.Token, basic)
	}
	if r.cfg.SSHKeyFile != "" {
		env = append(env, "GIT_SSH_COMMAND=ssh -i "+shellQuote(r.cfg.SSHKeyFile)+
			" -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=accept-new")
	}
	env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(kv)))
	for i, p := range kv {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, p[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, p[1]))
	}
	return env
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Scrub removes the credential (and its encoded header) from s.
func (r *Repo) Scrub(s string) string {
	for _, sec := range r.secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "[REDACTED]")
		}
	}
	return s
}

// gitError is a failed git command: its arguments (never a credential) and
// the scrubbed, bounded end of its stderr.
type gitError struct {
	args   []string
	stderr string
	err    error
}

func (e *gitError) Error() string {
	msg := "git " + strings.Join(e.args, " ") + ": " + e.err.Error()
	if e.stderr != "" {
		msg += ": " + e.stderr
	}
	return msg
}

func (e *gitError) Unwrap() error { return e.err }

// git runs one git command in dir and returns its stdout.
func (r *Repo) git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, r.cfg.Git, args...)
	cmd.Dir = dir
	cmd.Env = r.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// git starts helpers (ssh, git-remote-https): kill the whole group.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, context.Cause(ctx))
		}
		se := strings.TrimSpace(r.Scrub(strings.ToValidUTF8(stderr.String(), "?")))
		if len(se) > maxStderr {
			se = "…" + se[len(se)-maxStderr:]
		}
		return stdout.String(), &gitError{args: args, stderr: se, err: err}
	}
	return stdout.String(), nil
}

// gitConfig is what .git/config holds before every command: git's own
// defaults and the remote, nothing the pipeline wrote.
func (r *Repo) gitConfig() string {
	return "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n" +
		"[remote \"origin\"]\n\turl = " + quoteConfig(r.cfg.URL) + "\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
}

func quoteConfig(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// ensureRepo makes dir a repository of the remote, keeping any existing
// history, and resets .git/config. A .git that is not a plain directory
// (a gitfile or symlink pointing elsewhere) is refused.
func (r *Repo) ensureRepo(ctx context.Context, dir string) error {
	gd := filepath.Join(dir, ".git")
	fi, err := os.Lstat(gd)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, err := r.git(ctx, dir, "init", "--quiet"); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("stat .git: %w", err)
	case !fi.IsDir():
		return errors.New(".git is not a directory (a gitfile or symlink): refused")
	}
	if err := os.WriteFile(filepath.Join(gd, "config"), []byte(r.gitConfig()), 0o640); err != nil {
		return fmt.Errorf("write .git/config: %w", err)
	}
	// The daemon's own files in the work dir (logs, result and progress
	// files) are never committed.
	if err := os.MkdirAll(filepath.Join(gd, "info"), 0o750); err != nil {
		return fmt.Errorf("git info dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(gd, "info", "exclude"), []byte("/.agentsmith/\n/.agentsmith-*\n"), 0o640); err != nil {
		return fmt.Errorf("write .git/info/exclude: %w", err)
	}
	return nil
}

// Prepared says where Prepare left the working directory.
type Prepared struct {
	Branch string
	// Resumed is true when the branch existed on the remote (or locally,
	// ahead of it): the attempt continues earlier work.
	Resumed bool
	Head    string
}

// Prepare brings dir to the work branch: fetched from the remote, checked
// out from origin/branch when it exists, else created from origin/base.
// A local branch already containing origin/branch (a kept work dir whose
// last push failed, or a kill -9 after its last commit) is kept as it is,
// uncommitted changes included, so nothing of it is lost. Otherwise the
// working tree is reset to the remote's commit (untracked files other than
// ignored ones removed): another replica's later push wins over a stale
// local copy.
func (r *Repo) Prepare(ctx context.Context, dir, branch string) (Prepared, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	p := Prepared{Branch: branch}
	if err := CheckRefFormat(branch); err != nil {
		return p, err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return p, fmt.Errorf("work dir: %w", err)
	}
	if err := r.ensureRepo(ctx, dir); err != nil {
		return p, fmt.Errorf("prepare: %w", err)
	}
	if _, err := r.git(ctx, dir, "fetch", "--quiet", "--prune", "--no-tags", "origin"); err != nil {
		return p, fmt.Errorf("prepare: fetch: %w", err)
	}
	remote := "refs/remotes/origin/" + branch
	hasRemote := r.hasRef(ctx, dir, remote)
	hasLocal := r.hasRef(ctx, dir, "refs/heads/"+branch)
	cur, _ := r.git(ctx, dir, "symbolic-ref", "--quiet", "HEAD")
	onBranch := strings.TrimSpace(cur) == "refs/heads/"+branch
	switch {
	case hasLocal && onBranch && (!hasRemote || r.isAncestor(ctx, dir, remote, "refs/heads/"+branch)):
		p.Resumed = true
	case hasRemote:
		if err := r.checkout(ctx, dir, branch, remote); err != nil {
			return p, err
		}
		p.Resumed = true
	default:
		base := "refs/remotes/origin/" + r.cfg.Base
		if !r.hasRef(ctx, dir, base) {
			return p, fmt.Errorf("prepare: base branch %q not found on the remote", r.cfg.Base)
		}
		if err := r.checkout(ctx, dir, branch, base); err != nil {
			return p, err
		}
	}
	head, err := r.git(ctx, dir, "rev-parse", "HEAD")
	if err != nil {
		return p, fmt.Errorf("prepare: %w", err)
	}
	p.Head = strings.TrimSpace(head)
	if r.cfg.Owner != nil {
		if err := chownTree(dir, r.cfg.Owner); err != nil {
			return p, fmt.Errorf("prepare: %w", err)
		}
	}
	return p, nil
}

func (r *Repo) checkout(ctx context.Context, dir, branch, from string) error {
	if _, err := r.git(ctx, dir, "checkout", "--quiet", "--force", "--no-track", "-B", branch, from); err != nil {
		return fmt.Errorf("prepare: checkout: %w", err)
	}
	if _, err := r.git(ctx, dir, "clean", "--quiet", "-d", "--force"); err != nil {
		return fmt.Errorf("prepare: clean: %w", err)
	}
	return nil
}

func (r *Repo) hasRef(ctx context.Context, dir, ref string) bool {
	_, err := r.git(ctx, dir, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	return err == nil
}

func (r *Repo) isAncestor(ctx context.Context, dir, a, b string) bool {
	_, err := r.git(ctx, dir, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// Saved says what Save did.
type Saved struct {
	Branch string
	// Committed is true when there were changes to commit.
	Committed bool
	Head      string
	// Merged counts the rounds in which the push was rejected because the
	// branch had moved, and origin's commit was merged before trying again.
	Merged int
}

// Save commits everything in dir (message as the commit message; nothing
// when the tree is clean) and pushes the branch. A push rejected because
// the remote branch moved is fetched, merged and tried again (PushTries in
// all), never forced; a merge conflict gives up with the work committed
// locally. The caller's ctx should survive a shutdown: Save is what keeps
// the work when the run stops.
func (r *Repo) Save(ctx context.Context, dir, branch, message string) (Saved, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	s := Saved{Branch: branch}
	if err := CheckRefFormat(branch); err != nil {
		return s, err
	}
	if err := r.ensureRepo(ctx, dir); err != nil {
		return s, fmt.Errorf("save: %w", err)
	}
	cur, err := r.git(ctx, dir, "symbolic-ref", "--quiet", "HEAD")
	if err != nil || strings.TrimSpace(cur) != "refs/heads/"+branch {
		// The pipeline switched branches: keep its HEAD, on our branch.
		if _, err := r.git(ctx, dir, "checkout", "--quiet", "-B", branch); err != nil {
			return s, fmt.Errorf("save: back on %s: %w", branch, err)
		}
	}
	if _, err := r.git(ctx, dir, "add", "--all"); err != nil {
		return s, fmt.Errorf("save: %w", err)
	}
	if _, err := r.git(ctx, dir, "diff", "--cached", "--quiet"); err != nil {
		var ge *gitError
		if !errors.As(err, &ge) || !isExit(ge.err, 1) {
			return s, fmt.Errorf("save: %w", err)
		}
		if _, err := r.git(ctx, dir, "commit", "--quiet", "--no-verify", "-m", oneLine(message)); err != nil {
			return s, fmt.Errorf("save: commit: %w", err)
		}
		s.Committed = true
	}
	for try := 1; ; try++ {
		_, err := r.git(ctx, dir, "push", "--quiet", "--no-verify", "origin", "refs/heads/"+branch+":refs/heads/"+branch)
		if err == nil {
			break
		}
		if !rejected(err) || try >= r.cfg.PushTries {
			return s, fmt.Errorf("save: push: %w", err)
		}
		// The branch moved (another replica's push): take its commits.
		if _, err := r.git(ctx, dir, "fetch", "--quiet", "--no-tags", "origin", "+refs/heads/"+branch+":refs/remotes/origin/"+branch); err != nil {
			return s, fmt.Errorf("save: fetch after a rejected push: %w", err)
		}
		if _, err := r.git(ctx, dir, "merge", "--quiet", "--no-edit", "--no-verify", "-m",
			"agent-smith: merge "+branch+" moved by another run", "refs/remotes/origin/"+branch); err != nil {
			_, _ = r.git(ctx, dir, "merge", "--abort")
			return s, fmt.Errorf("save: the remote branch moved and does not merge (work committed locally only): %w", err)
		}
		s.Merged++
	}
	head, _ := r.git(ctx, dir, "rev-parse", "HEAD")
	s.Head = strings.TrimSpace(head)
	return s, nil
}

// rejected reports a push refused because the remote branch is not an
// ancestor of ours (git's "[rejected] ... (fetch first)" or
// "(non-fast-forward)").
func rejected(err error) bool {
	var ge *gitError
	if !errors.As(err, &ge) {
		return false
	}
	return strings.Contains(ge.stderr, "[rejected]") &&
		(strings.Contains(ge.stderr, "fetch first") || strings.Contains(ge.stderr, "non-fast-forward"))
}

func isExit(err error, code int) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == code
}

// oneLine keeps a commit subject to one bounded line.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	if len(s) > 200 {
		cut := 0
		for i := range s {
			if i > 200 {
				break
			}
			cut = i
		}
		s = s[:cut]
	}
	return s
}

// chownTree gives every file under dir to owner (the pipeline's user),
// never through a link: the tree may hold links the last attempt planted,
// and a lingering process of it may swap a directory for one mid-walk.
func chownTree(dir string, owner *syscall.Credential) error {
	if err := nofollow.ChownTree(dir, int(owner.Uid), int(owner.Gid)); err != nil {
		return fmt.Errorf("hand %s to uid %d: %w", dir, owner.Uid, err)
	}
	return nil
}
