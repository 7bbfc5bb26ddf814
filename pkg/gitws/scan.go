package gitws

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/redact"
)

// DefaultScanMaxBytes bounds what Save reads to scan one push for secrets:
// the commits, trees and blobs it would send, all of them together. A push
// with more is refused (ErrScanTooLarge), not sent unscanned.
const DefaultScanMaxBytes = 512 << 20

// scanChunk is how much of an object is searched at once: objects are
// streamed, so no blob, however large, is held whole in memory.
const scanChunk = 1 << 20

// maxNameCommits bounds how many of the pushed commits are diffed to name
// the file a secret was found in; past them the error names the object.
const maxNameCommits = 1000

// ErrScanTooLarge is the refusal of a push whose new objects hold more
// than Config.ScanMaxBytes.
var ErrScanTooLarge = errors.New("too large to scan for secrets")

// SecretError is a push Save refused because a commit it would send holds
// a secret (Config.Secrets or the push token, in any form pkg/redact
// matches): in a file's content, a file's name or the commit's message.
// Its message names the commit and the file, never the secret; a path that
// itself holds a secret is not named.
type SecretError struct {
	// Commit is the short sha of the commit that adds the secret ("" when
	// it could not be told).
	Commit string
	// Path is the file, in the commit's tree, whose content holds it; ""
	// when it is not a file's content or the file could not be told.
	Path string
	// In says where it was found when Path does not: "its message", "a
	// file name", "a file".
	In string
}

func (e *SecretError) Error() string {
	commit := "a pushed commit"
	if e.Commit != "" {
		commit = "commit " + e.Commit
	}
	if e.Path != "" {
		return commit + " adds a secret in " + e.Path
	}
	if e.In == "its message" {
		return commit + " has a secret in its message"
	}
	return commit + " adds a secret in " + e.In
}

// scanPush refuses the push of local when an object it would send to the
// remote holds a secret. The objects are those reachable from local and
// from no remote-tracking ref (git rev-list --objects local --not
// --remotes=origin): every commit, tree and blob of the range, the history
// included, so a secret added in one commit and removed in the next is
// still found. A commit object holds its message, a tree its file names,
// a blob a file's content, binary or not; each is streamed through git
// cat-file --batch and searched a chunk at a time. Git runs as every git
// of the daemon does (Repo.git: its own git dir, the hardening env): the
// work dir's config, hooks and .git are never read.
func (r *Repo) scanPush(ctx context.Context, d Dirs, local string) error {
	if r.scan.Empty() {
		return nil
	}
	out, err := r.git(ctx, d, "rev-list", "--objects", "--no-object-names", local, "--not", "--remotes=origin")
	if err != nil {
		return fmt.Errorf("list the objects to push: %w", err)
	}
	objects := strings.Fields(out)
	if len(objects) == 0 {
		return nil
	}
	hit, typ, err := r.scanObjects(ctx, d, objects)
	if err != nil || hit == "" {
		return err
	}
	return r.nameSecret(ctx, d, local, hit, typ)
}

// scanObjects streams objects through one git cat-file --batch and returns
// the first one holding a secret and its type ("" when none does).
func (r *Repo) scanObjects(ctx context.Context, d Dirs, objects []string) (hit, typ string, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.cfg.Git, "cat-file", "--batch")
	cmd.Dir = d.Git
	cmd.Env = append(append(append([]string{}, r.env...), r.credEnv...), "GIT_DIR="+d.Git, "GIT_WORK_TREE="+d.Work)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", "", err
	}
	if err := cmd.Start(); err != nil {
		return "", "", fmt.Errorf("git cat-file: %w", err)
	}
	go func() {
		w := bufio.NewWriter(stdin)
		for _, o := range objects {
			if _, err := w.WriteString(o + "\n"); err != nil {
				break
			}
		}
		_ = w.Flush()
		_ = stdin.Close()
	}()
	hit, typ, err = r.readBatch(bufio.NewReaderSize(stdout, 64<<10), len(objects))
	if hit != "" || err != nil {
		// Nothing more is read: git is stopped, not waited on to finish.
		cancel()
		_ = cmd.Wait()
		return hit, typ, err
	}
	if err := cmd.Wait(); err != nil {
		return "", "", fmt.Errorf("git cat-file: %w", err)
	}
	return "", "", nil
}

// readBatch reads n objects of git cat-file --batch output ("<sha> <type>
// <size>\n<content>\n" each) and returns the first holding a secret.
func (r *Repo) readBatch(br *bufio.Reader, n int) (hit, typ string, err error) {
	keep := max(r.scan.MaxLen()-1, 0)
	buf := make([]byte, 0, scanChunk+keep)
	var total int64
	for range n {
		head, err := br.ReadString('\n')
		if err != nil {
			return "", "", fmt.Errorf("git cat-file: %w", err)
		}
		f := strings.Fields(head)
		if len(f) != 3 {
			return "", "", fmt.Errorf("git cat-file: unexpected %q", strings.TrimSpace(head))
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || size < 0 {
			return "", "", fmt.Errorf("git cat-file: unexpected %q", strings.TrimSpace(head))
		}
		if total += size; total > r.cfg.ScanMaxBytes {
			return "", "", fmt.Errorf("%w: the commits to push hold more than %d bytes", ErrScanTooLarge, r.cfg.ScanMaxBytes)
		}
		buf = buf[:0]
		for left := size; left > 0; {
			m := min(left, scanChunk)
			start := len(buf)
			buf = buf[:start+int(m)]
			if _, err := io.ReadFull(br, buf[start:]); err != nil {
				return "", "", fmt.Errorf("git cat-file: %w", err)
			}
			left -= m
			if r.scan.ContainsBytes(buf) {
				return f[0], f[1], nil
			}
			// The next chunk starts with this one's last keep bytes: a
			// form cut in two is found whole.
			if len(buf) > keep {
				buf = append(buf[:0], buf[len(buf)-keep:]...)
			}
		}
		if _, err := br.Discard(1); err != nil { // the "\n" after the content
			return "", "", fmt.Errorf("git cat-file: %w", err)
		}
	}
	return "", "", nil
}

// nameSecret is the SecretError for object hit, of type typ: the commit
// that adds it and, for a blob, the file's path, found by diffing the
// pushed commits in order, oldest first.
func (r *Repo) nameSecret(ctx context.Context, d Dirs, local, hit, typ string) error {
	e := &SecretError{In: "a file"}
	switch typ {
	case "commit":
		return &SecretError{Commit: short(hit), In: "its message"}
	case "tree":
		e.In = "a file name"
	}
	out, err := r.git(ctx, d, "rev-list", "--reverse", local, "--not", "--remotes=origin")
	if err != nil {
		return e
	}
	commits := strings.Fields(out)
	for _, c := range commits[:min(len(commits), maxNameCommits)] {
		diff, err := r.git(ctx, d, "diff-tree", "-r", "-t", "-z", "-m", "--root", "--no-renames", "--no-commit-id", c)
		if err != nil {
			continue
		}
		// Records: ":oldmode newmode oldsha newsha status\0path\0".
		fields := strings.Split(diff, "\x00")
		for i := 0; i+1 < len(fields); i += 2 {
			meta, path := strings.Fields(fields[i]), fields[i+1]
			if len(meta) != 5 {
				continue
			}
			switch {
			case typ == "tree" && r.scan.Contains(path):
				e.Commit = short(c)
				return e
			case typ == "blob" && meta[3] == hit:
				e.Commit = short(c)
				if !r.scan.Contains(path) {
					e.Path = printablePath(path)
				}
				return e
			}
		}
	}
	return e
}

// printablePath is a pipeline-chosen path fit for a one-line message:
// control characters shown as '?', at most 200 bytes.
func printablePath(p string) string {
	p = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(p, "?"))
	if len(p) > 200 {
		p = strings.ToValidUTF8(p[:200], "") + "…"
	}
	return p
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// newScan is the Redactor Save scans with: the project's secrets and the
// push token.
func newScan(cfg Config) *redact.Redactor {
	return redact.New(append(append([]string{}, cfg.Secrets...), cfg.Token)...)
}
