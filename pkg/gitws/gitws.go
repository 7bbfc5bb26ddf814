// Package gitws keeps a ticket's work on a git branch so it survives the
// attempt that made it (seed: Branch Persistence): before a run the ticket's
// working directory is brought to the branch's last pushed commit (or made
// from the base branch), after a run everything in it is committed and
// pushed. A run that moves to another replica starts from that commit.
//
// Git runs as a child process with a context. Credentials reach git only
// through its environment (http.extraHeader from GIT_CONFIG_*, or
// GIT_SSH_COMMAND with a key file): never on its command line, never in a
// config file, and every error is scrubbed of them.
//
// The working directory belongs to the pipeline, which is not trusted: its
// files, and any .git in it, are hostile. The daemon's repository is
// therefore not in it. Dirs.Git, a directory outside the work tree that the
// daemon owns (mode 0700), holds the config, refs, index and objects; every
// git command the daemon runs names it in GIT_DIR and the work tree in
// GIT_WORK_TREE, with the system and global config, repository discovery,
// replace refs, hooks and fsmonitor off and only the remote's protocol
// allowed. Nothing the pipeline writes is read as git metadata (no
// commondir, config.worktree, include, core.worktree, url.*.insteadOf,
// uploadpack, filter driver), so nothing in the work dir can run a command
// as the daemon or send the push and its token elsewhere.
//
// The pipeline gets a repository of its own, <work>/.git, made afresh by
// Prepare as the pipeline's user (Config.Owner) from a bundle of the work
// branch: it can commit, branch or break it as it likes, and the daemon
// never reads it. Save commits what the work tree holds; what the pipeline
// pushed itself is adopted when the tree is the same.
//
// What the work tree holds is the pipeline's, and the daemon pushes it with
// its own credentials: before every push the commits it would send are
// scanned for the project's secrets (Config.Secrets, and the push token),
// and a push that would publish one is refused (SecretError).
package gitws

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/nofollow"
	"github.com/agentsmithd/agentsmithd/pkg/owndir"
	"github.com/agentsmithd/agentsmithd/pkg/redact"
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
	// Secrets are the project's secret values. Save refuses to push a
	// commit that holds one of them, or Token, in any form pkg/redact
	// matches (raw, URL-encoded, base64) in a file, a file name or a
	// message: the pipeline writes the files, and a token it wrote to one
	// must not be published on the work branch with the daemon's
	// credentials. Values shorter than redact.MinSecretLen are not looked
	// for.
	Secrets []string
	// ScanMaxBytes bounds what that scan reads for one push
	// (DefaultScanMaxBytes); a push with more is refused.
	ScanMaxBytes int64
}

// Repo performs the work-branch operations of one project. Safe for
// concurrent use on different directories.
type Repo struct {
	cfg     Config
	scan    *redact.Redactor // what Save refuses to push (Config.Secrets)
	secrets []string         // scrubbed from every message
	env     []string         // every git's
	credEnv []string         // the daemon's own git's: config overrides and the credential
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
	if cfg.ScanMaxBytes <= 0 {
		cfg.ScanMaxBytes = DefaultScanMaxBytes
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
	r := &Repo{cfg: cfg, scan: newScan(cfg)}
	r.env, r.credEnv = r.buildEnv()
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

// WithOwner is r with another Config.Owner: the user of one run (a
// sandbox's uid, leased per run) where r's is the project's.
func (r *Repo) WithOwner(owner *syscall.Credential) *Repo {
	c := *r
	c.cfg.Owner = owner
	return &c
}

// Branch is the work branch of ticketID.
func (r *Repo) Branch(ticketID string) (string, error) { return BranchName(r.cfg.Branch, ticketID) }

// Dirs are the two directories of one ticket's work branch.
type Dirs struct {
	// Work is the working tree the pipeline runs in and owns.
	Work string
	// Git is the daemon's git dir for Work: outside Work, in a directory
	// the pipeline's user can neither write nor read, kept between attempts
	// on a replica (it holds the history a kept work dir resumes from) and
	// made again from the remote when missing.
	Git string
	// Root is the directory Git is under where the daemon keeps the git
	// dirs of every ticket ({work_dir}-git); "" is Git's parent. It must be
	// the daemon's and writable by no one else (pkg/owndir): whoever can
	// write it can replace Git, whose config the daemon's git runs.
	Root string
}

// root is d.Root, or Git's parent when unset.
func (d Dirs) root() string {
	if d.Root == "" {
		return filepath.Dir(filepath.Clean(d.Git))
	}
	return filepath.Clean(d.Root)
}

func (d Dirs) check() error {
	if !filepath.IsAbs(d.Work) || !filepath.IsAbs(d.Git) {
		return errors.New("gitws: work and git dirs must be absolute paths")
	}
	w, g := filepath.Clean(d.Work), filepath.Clean(d.Git)
	if g == w || strings.HasPrefix(g, w+string(filepath.Separator)) {
		return errors.New("gitws: the git dir must not be inside the work tree")
	}
	if rel, err := filepath.Rel(d.root(), g); !filepath.IsAbs(d.root()) || err != nil || rel == "." || !filepath.IsLocal(rel) {
		return errors.New("gitws: the git dir must be below its absolute root")
	}
	if r := d.root(); r == w || strings.HasPrefix(r, w+string(filepath.Separator)) {
		return errors.New("gitws: the git root must not be inside the work tree")
	}
	return nil
}

// buildEnv is the environment common to every git the daemon starts: a
// few of the daemon's variables, prompts off, no config file but the
// repository's own (GIT_DIR's, which the daemon owns), and the overrides
// that outrank anything in it. The credential is in cred, used only for
// the daemon's own commands.
func (r *Repo) buildEnv() (base, cred []string) {
	for _, k := range []string{"PATH", "HOME", "TZ", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR", "HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"} {
		if v, ok := os.LookupEnv(k); ok {
			base = append(base, k+"="+v)
		}
	}
	// C locale: rejected reads git's English messages. No system or
	// global config (a pipeline running as the daemon's user could write
	// ~/.gitconfig), no system attributes, no replace refs, no discovery,
	// no lazy fetch of missing objects, pathspecs taken literally.
	base = append(base, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=true", "SSH_ASKPASS=true", "GCM_INTERACTIVE=never",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_ATTR_NOSYSTEM=1", "GIT_NO_REPLACE_OBJECTS=1",
		"GIT_CEILING_DIRECTORIES=/", "GIT_NO_LAZY_FETCH=1", "GIT_PROTOCOL_FROM_USER=0", "GIT_LITERAL_PATHSPECS=1",
		"GIT_AUTHOR_NAME="+r.cfg.AuthorName, "GIT_AUTHOR_EMAIL="+r.cfg.AuthorEmail,
		"GIT_COMMITTER_NAME="+r.cfg.AuthorName, "GIT_COMMITTER_EMAIL="+r.cfg.AuthorEmail)
	kv := [][2]string{
		{"core.hooksPath", "/dev/null"},
		{"core.fsmonitor", "false"},
		{"core.attributesFile", "/dev/null"},
		{"core.excludesFile", "/dev/null"},
		{"credential.helper", ""},
		{"gc.auto", "0"},
		{"commit.gpgSign", "false"},
		// No submodule is ever cloned or updated (CVE-2024-32002,
		// CVE-2025-48384 wrote hooks through submodule paths).
		{"submodule.recurse", "false"},
		{"fetch.recurseSubmodules", "false"},
		{"protocol.allow", "never"},
		{"protocol." + urlScheme(r.cfg.URL) + ".allow", "always"},
	}
	if r.cfg.Token != "" {
		basic := base64.StdEncoding.EncodeToString([]byte(r.cfg.TokenUser + ":" + r.cfg.Token))
		kv = append(kv, [2]string{"http.extraHeader", "Authorization: Basic " + basic})
		r.secrets = append(r.secrets, r.cfg.Token, basic)
	}
	if r.cfg.SSHKeyFile != "" {
		cred = append(cred, "GIT_SSH_COMMAND=ssh -i "+shellQuote(r.cfg.SSHKeyFile)+
			" -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=accept-new")
	}
	cred = append(cred, configEnv(kv)...)
	return base, cred
}

// configEnv is kv as GIT_CONFIG_COUNT/KEY/VALUE: config that outranks
// every file.
func configEnv(kv [][2]string) []string {
	env := []string{"GIT_CONFIG_COUNT=" + strconv.Itoa(len(kv))}
	for i, p := range kv {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, p[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, p[1]))
	}
	return env
}

// urlScheme is the transport git uses for raw (protocol.<name>.allow).
func urlScheme(raw string) string {
	if scheme, _, ok := strings.Cut(raw, "://"); ok {
		return strings.ToLower(scheme)
	}
	// scp-like user@host:path is ssh; anything else a local path. git
	// reads a colon before any slash as scp-like.
	if i := strings.IndexByte(raw, ':'); i > 0 && !strings.Contains(raw[:i], "/") {
		return "ssh"
	}
	return "file"
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

// git runs one git command on the daemon's repository d.Git with d.Work as
// its work tree, in d.Git (never in the work tree: nothing is discovered
// from there), and returns its stdout.
func (r *Repo) git(ctx context.Context, d Dirs, args ...string) (string, error) {
	env := append(append(append([]string{}, r.env...), r.credEnv...), "GIT_DIR="+d.Git, "GIT_WORK_TREE="+d.Work)
	return r.run(ctx, d.Git, env, nil, nil, args...)
}

// run starts git in dir with env, as owner when it is not nil.
func (r *Repo) run(ctx context.Context, dir string, env []string, owner *syscall.Credential, stdout io.Writer, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, r.cfg.Git, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: owner}
	// git starts helpers (ssh, git-remote-https): kill the whole group.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if stdout != nil {
		cmd.Stdout = stdout
	}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, context.Cause(ctx))
		}
		se := strings.TrimSpace(r.Scrub(strings.ToValidUTF8(stderr.String(), "?")))
		if len(se) > maxStderr {
			se = "…" + se[len(se)-maxStderr:]
		}
		return out.String(), &gitError{args: args, stderr: se, err: err}
	}
	return out.String(), nil
}

// gitConfig is what the daemon's git dir's config holds before every
// command: git's own defaults and the remote. It is written again each time
// though only the daemon writes that directory: a git that wrote config
// from repository data (CVE-2023-29007) would not keep what it wrote.
func (r *Repo) gitConfig() string {
	return "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n" +
		"[remote \"origin\"]\n\turl = " + quoteConfig(r.cfg.URL) + "\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
}

func quoteConfig(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// excludes are never committed: the daemon's own files in the work dir
// (logs, result and progress files).
const excludes = "/.agentsmith/\n/.agentsmith-*\n"

// worktreeIDFile, in the git dir, names the work tree (device and inode)
// the index was last checked out to: a work dir removed and made again
// (retention, an operator) is checked out again, not taken for kept work.
const worktreeIDFile = "agentsmith-worktree"

// ensureRepo makes d.Git the daemon's repository of the remote, keeping any
// existing history, and resets its config and excludes. The git root, the
// git dir and the directories between are the daemon's alone (0700); a
// root or git dir another user owns or may write is refused.
func (r *Repo) ensureRepo(ctx context.Context, d Dirs) error {
	if err := owndir.Ensure(d.root(), 0o700); err != nil {
		return fmt.Errorf("git root: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(d.Git), 0o700); err != nil {
		return fmt.Errorf("git dir: %w", err)
	}
	if err := os.Mkdir(d.Git, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("git dir: %w", err)
	}
	if fi, err := os.Lstat(d.Git); err != nil || !fi.IsDir() {
		return fmt.Errorf("git dir %s: not a directory", d.Git)
	}
	if err := os.Chmod(d.Git, 0o700); err != nil {
		return fmt.Errorf("git dir: %w", err)
	}
	if err := owndir.Check(d.Git); err != nil {
		return fmt.Errorf("git dir: %w", err)
	}
	if _, err := os.Stat(filepath.Join(d.Git, "HEAD")); errors.Is(err, fs.ErrNotExist) {
		if _, err := r.git(ctx, d, "init", "--quiet"); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(d.Git, "config"), []byte(r.gitConfig()), 0o600); err != nil {
		return fmt.Errorf("write the git dir's config: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(d.Git, "info"), 0o700); err != nil {
		return fmt.Errorf("git info dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(d.Git, "info", "exclude"), []byte(excludes), 0o600); err != nil {
		return fmt.Errorf("write info/exclude: %w", err)
	}
	return nil
}

// worktreeID is the work tree's device and inode.
func worktreeID(dir string) string {
	fi, err := os.Lstat(dir)
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d:%d\n", st.Dev, st.Ino)
}

// Prepared says where Prepare left the working directory.
type Prepared struct {
	Branch string
	// Resumed is true when the branch existed on the remote (or locally,
	// ahead of it): the attempt continues earlier work.
	Resumed bool
	Head    string
}

// Prepare brings d.Work to the work branch: fetched from the remote,
// checked out from origin/branch when it exists, else created from
// origin/base. A local branch already containing origin/branch (a kept
// work dir whose last push failed, or a kill -9 after its last commit) is
// kept as it is, uncommitted changes included, so nothing of it is lost.
// Otherwise the working tree is reset to the remote's commit (untracked
// files other than ignored ones removed): another replica's later push
// wins over a stale local copy. Last, the pipeline's own <work>/.git is
// made afresh on the branch (pipelineRepo).
func (r *Repo) Prepare(ctx context.Context, d Dirs, branch string) (Prepared, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	p := Prepared{Branch: branch}
	if err := CheckRefFormat(branch); err != nil {
		return p, err
	}
	if err := d.check(); err != nil {
		return p, err
	}
	if err := os.MkdirAll(d.Work, 0o750); err != nil {
		return p, fmt.Errorf("work dir: %w", err)
	}
	if err := r.ensureRepo(ctx, d); err != nil {
		return p, fmt.Errorf("prepare: %w", err)
	}
	if _, err := r.git(ctx, d, "fetch", "--quiet", "--prune", "--no-tags", "origin"); err != nil {
		return p, fmt.Errorf("prepare: fetch: %w", err)
	}
	remote := "refs/remotes/origin/" + branch
	local := "refs/heads/" + branch
	hasRemote := r.hasRef(ctx, d, remote)
	hasLocal := r.hasRef(ctx, d, local)
	cur, _ := r.git(ctx, d, "symbolic-ref", "--quiet", "HEAD")
	onBranch := strings.TrimSpace(cur) == local
	idFile := filepath.Join(d.Git, worktreeIDFile)
	known, _ := os.ReadFile(idFile)
	id := worktreeID(d.Work)
	switch {
	case hasLocal && onBranch && (!hasRemote || r.isAncestor(ctx, d, remote, local)):
		p.Resumed = true
		if string(known) != id {
			if err := r.checkout(ctx, d, branch, local); err != nil {
				return p, err
			}
		}
	case hasRemote:
		if err := r.checkout(ctx, d, branch, remote); err != nil {
			return p, err
		}
		p.Resumed = true
	default:
		base := "refs/remotes/origin/" + r.cfg.Base
		if !r.hasRef(ctx, d, base) {
			return p, fmt.Errorf("prepare: base branch %q not found on the remote", r.cfg.Base)
		}
		if err := r.checkout(ctx, d, branch, base); err != nil {
			return p, err
		}
	}
	if err := os.WriteFile(idFile, []byte(id), 0o600); err != nil {
		return p, fmt.Errorf("prepare: %w", err)
	}
	head, err := r.git(ctx, d, "rev-parse", "HEAD")
	if err != nil {
		return p, fmt.Errorf("prepare: %w", err)
	}
	p.Head = strings.TrimSpace(head)
	if r.cfg.Owner != nil {
		if err := chownTree(d.Work, r.cfg.Owner); err != nil {
			return p, fmt.Errorf("prepare: %w", err)
		}
	}
	if err := r.pipelineRepo(ctx, d, branch); err != nil {
		return p, fmt.Errorf("prepare: the pipeline's repository: %w", err)
	}
	return p, nil
}

func (r *Repo) checkout(ctx context.Context, d Dirs, branch, from string) error {
	if _, err := r.git(ctx, d, "checkout", "--quiet", "--force", "--no-track", "-B", branch, from); err != nil {
		return fmt.Errorf("prepare: checkout: %w", err)
	}
	if _, err := r.git(ctx, d, "clean", "--quiet", "-d", "--force"); err != nil {
		return fmt.Errorf("prepare: clean: %w", err)
	}
	return nil
}

func (r *Repo) hasRef(ctx context.Context, d Dirs, ref string) bool {
	_, err := r.git(ctx, d, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	return err == nil
}

func (r *Repo) isAncestor(ctx context.Context, d Dirs, a, b string) bool {
	_, err := r.git(ctx, d, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

func (r *Repo) revParse(ctx context.Context, d Dirs, rev string) string {
	out, err := r.git(ctx, d, "rev-parse", "--verify", "--quiet", rev)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
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

// Save commits everything in d.Work on the daemon's branch (message as the
// commit message; nothing when the tree is clean) and pushes it. The
// pipeline's own .git is not read: its commits count by the tree they left.
// When the pipeline pushed the branch itself and the remote's commit holds
// exactly the work tree, that commit is taken as it is. A push rejected
// because the remote branch moved is fetched, merged and tried again
// (PushTries in all), never forced; a merge conflict gives up with the work
// committed locally. Before every push the commits it would send are
// scanned for the project's secrets (scanPush): one found refuses the push
// with a *SecretError, the work committed locally only. The caller's ctx should survive a shutdown: Save is
// what keeps the work when the run stops.
func (r *Repo) Save(ctx context.Context, d Dirs, branch, message string) (Saved, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	s := Saved{Branch: branch}
	if err := CheckRefFormat(branch); err != nil {
		return s, err
	}
	if err := d.check(); err != nil {
		return s, err
	}
	if err := r.ensureRepo(ctx, d); err != nil {
		return s, fmt.Errorf("save: %w", err)
	}
	local := "refs/heads/" + branch
	if cur, _ := r.git(ctx, d, "symbolic-ref", "--quiet", "HEAD"); strings.TrimSpace(cur) != local {
		if !r.hasRef(ctx, d, local) {
			return s, fmt.Errorf("save: no branch %s in the git dir (not prepared)", branch)
		}
		if _, err := r.git(ctx, d, "symbolic-ref", "HEAD", local); err != nil {
			return s, fmt.Errorf("save: %w", err)
		}
	}
	if _, err := r.git(ctx, d, "add", "--all"); err != nil {
		return s, fmt.Errorf("save: %w", err)
	}
	if err := r.dropNewGitlinks(ctx, d); err != nil {
		return s, fmt.Errorf("save: %w", err)
	}
	if err := r.adoptPushed(ctx, d, branch); err != nil {
		return s, fmt.Errorf("save: %w", err)
	}
	if _, err := r.git(ctx, d, "diff", "--cached", "--quiet"); err != nil {
		var ge *gitError
		if !errors.As(err, &ge) || !isExit(ge.err, 1) {
			return s, fmt.Errorf("save: %w", err)
		}
		if _, err := r.git(ctx, d, "commit", "--quiet", "--no-verify", "-m", oneLine(message)); err != nil {
			return s, fmt.Errorf("save: commit: %w", err)
		}
		s.Committed = true
	}
	for try := 1; ; try++ {
		// Scanned before every push: a merge after a rejected one adds a
		// commit to what is sent.
		if err := r.scanPush(ctx, d, local); err != nil {
			return s, fmt.Errorf("save: not pushed: %w", err)
		}
		_, err := r.git(ctx, d, "push", "--quiet", "--no-verify", "origin", local+":"+local)
		if err == nil {
			break
		}
		if !rejected(err) || try >= r.cfg.PushTries {
			return s, fmt.Errorf("save: push: %w", err)
		}
		// The branch moved (another replica's push): take its commits.
		if _, err := r.git(ctx, d, "fetch", "--quiet", "--no-tags", "origin", "+"+local+":refs/remotes/origin/"+branch); err != nil {
			return s, fmt.Errorf("save: fetch after a rejected push: %w", err)
		}
		if _, err := r.git(ctx, d, "merge", "--quiet", "--no-edit", "--no-verify", "-m",
			"agent-smith: merge "+branch+" moved by another run", "refs/remotes/origin/"+branch); err != nil {
			_, _ = r.git(ctx, d, "merge", "--abort")
			return s, fmt.Errorf("save: the remote branch moved and does not merge (work committed locally only): %w", err)
		}
		s.Merged++
	}
	s.Head = r.revParse(ctx, d, "HEAD")
	return s, nil
}

// adoptPushed moves the branch to the remote's commit when the pipeline
// pushed the branch itself (examples/pipelines do) and that commit, a
// descendant of ours, holds exactly the staged work tree: its commits stay
// on the branch as they are, with no second commit of the same change and
// no merge. A remote branch that does not exist, cannot be fetched or
// holds anything else leaves the branch where it is.
func (r *Repo) adoptPushed(ctx context.Context, d Dirs, branch string) error {
	remote := "refs/remotes/origin/" + branch
	if _, err := r.git(ctx, d, "fetch", "--quiet", "--no-tags", "origin", "+refs/heads/"+branch+":"+remote); err != nil {
		return nil
	}
	head, theirs := r.revParse(ctx, d, "HEAD"), r.revParse(ctx, d, remote)
	if theirs == "" || theirs == head || !r.isAncestor(ctx, d, head, theirs) {
		return nil
	}
	tree, err := r.git(ctx, d, "write-tree")
	if err != nil {
		return err
	}
	if strings.TrimSpace(tree) != r.revParse(ctx, d, remote+"^{tree}") {
		return nil
	}
	_, err = r.git(ctx, d, "update-ref", "-m", "agent-smith: the pipeline's push", "refs/heads/"+branch, theirs, head)
	return err
}

// dropNewGitlinks unstages the nested repositories add --all took in as
// gitlinks (a directory in the work tree with a .git of its own): a commit
// pointing at a repository that exists only in the work dir is of no use to
// anyone, and its files are the nested repository's to keep. Gitlinks the
// branch already had (submodules) stay as they are.
func (r *Repo) dropNewGitlinks(ctx context.Context, d Dirs) error {
	out, err := r.git(ctx, d, "diff-index", "--cached", "-z", "--no-renames", "HEAD")
	if err != nil {
		return err
	}
	// Records: ":oldmode newmode oldsha newsha status\0path\0".
	fields := strings.Split(out, "\x00")
	var paths []string
	for i := 0; i+1 < len(fields); i += 2 {
		meta := strings.Fields(fields[i])
		if len(meta) == 5 && meta[1] == "160000" && meta[0] != "160000" {
			paths = append(paths, fields[i+1])
		}
	}
	if len(paths) == 0 {
		return nil
	}
	_, err = r.git(ctx, d, append([]string{"rm", "--cached", "--quiet", "-r", "--"}, paths...)...)
	return err
}

// pipelineRepo gives the pipeline a repository of its own in <work>/.git,
// on the work branch at the daemon's commit, with origin's URL (no
// credential) and the daemon's excludes. Whatever .git the work dir held
// is removed first (os.RemoveAll never follows a symlink). Every git
// command here runs as the pipeline's user, in the work tree, with the
// pipeline's own repository and no credential in its environment: the
// daemon's git dir is given to it only as a bundle file. Nothing goes the
// other way: the daemon never clones or fetches from the pipeline's
// repository (the local-clone CVEs 2022-39253, 2024-32004, 2024-32020 and
// 2024-32021 need a clone from an untrusted repository on the same disk).
func (r *Repo) pipelineRepo(ctx context.Context, d Dirs, branch string) error {
	tmp, err := os.MkdirTemp("", "agentsmith-gitws-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	template := filepath.Join(tmp, "template")
	if err := os.MkdirAll(filepath.Join(template, "info"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(template, "info", "exclude"), []byte(excludes), 0o644); err != nil {
		return err
	}
	bundle := filepath.Join(tmp, "work.bundle")
	refs := []string{"refs/heads/" + branch}
	for _, ref := range []string{"refs/remotes/origin/" + branch, "refs/remotes/origin/" + r.cfg.Base} {
		if r.hasRef(ctx, d, ref) && !slices.Contains(refs, ref) {
			refs = append(refs, ref)
		}
	}
	if _, err := r.git(ctx, d, append([]string{"bundle", "create", "--quiet", bundle}, refs...)...); err != nil {
		return err
	}
	for _, p := range []string{tmp, template, filepath.Join(template, "info"), bundle} {
		if err := os.Chmod(p, 0o755); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(filepath.Join(d.Work, ".git")); err != nil {
		return fmt.Errorf("remove the old .git: %w", err)
	}
	env := append(append([]string{}, r.env...), configEnv([][2]string{
		{"core.hooksPath", "/dev/null"}, {"core.fsmonitor", "false"},
		{"protocol.allow", "never"}, {"protocol.file.allow", "always"}, // the bundle
	})...)
	env = append(env, "GIT_DIR="+filepath.Join(d.Work, ".git"), "GIT_WORK_TREE="+d.Work)
	steps := [][]string{
		{"init", "--quiet", "--template=" + template},
		{"fetch", "--quiet", "--no-tags", "--update-head-ok", bundle, "+refs/heads/*:refs/heads/*", "+refs/remotes/origin/*:refs/remotes/origin/*"},
		{"symbolic-ref", "HEAD", "refs/heads/" + branch},
		{"config", "remote.origin.url", r.cfg.URL},
		{"config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"},
		{"reset", "--quiet"},
	}
	for _, args := range steps {
		if _, err := r.run(ctx, d.Work, env, r.cfg.Owner, nil, args...); err != nil {
			return err
		}
	}
	return nil
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
