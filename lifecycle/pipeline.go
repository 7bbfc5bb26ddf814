package lifecycle

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentsmithd/agentsmithd/pkg/nofollow"
	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// inheritedEnv is the part of the daemon's own environment a pipeline sees.
// Nothing else is inherited: the daemon's tokens and webhook secrets live in
// its environment and must not reach a pipeline unless a project passes them
// explicitly through pipeline.env.
var inheritedEnv = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TZ", "TMPDIR", "SHELL"}

var unsafePath = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// WorkDir is the ticket's working directory under root. It is kept between
// attempts so a retry can resume from what the previous attempt left.
// Each part is one path segment under root, never "." or "..", so no
// project or ticket name can move it elsewhere.
func WorkDir(root string, ref platforms.Ref) string {
	return filepath.Join(root, pathSegment(ref.Project), TicketDirName(ref.Platform, ref.ID))
}

// TicketDirName is the ticket's directory name under its project's, in the
// work root and the logs dir.
func TicketDirName(platform, id string) string {
	return pathSegment(platform + "_" + id)
}

func pathSegment(s string) string {
	s = unsafePath.ReplaceAllString(s, "_")
	if strings.Trim(s, ".") == "" {
		return strings.Repeat("_", max(len(s), 1))
	}
	return s
}

// stdinPayload is the JSON a pipeline reads on stdin.
type stdinPayload struct {
	ID       string   `json:"id"`
	Platform string   `json:"platform"`
	Project  string   `json:"project"`
	Title    string   `json:"title"`
	Body     string   `json:"body"`
	Labels   []string `json:"labels"`
	URL      string   `json:"url"`
	Attempt  int      `json:"attempt"`
}

// pipelineSpec builds the process spec for one attempt on ticket t.
func pipelineSpec(p *Project, t *platforms.Ticket, attempt int, workDir string) procrun.Spec {
	env := make([]string, 0, len(inheritedEnv)+len(p.Pipeline.Env)+len(p.Pipeline.Secrets)+8)
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	names := make([]string, 0, len(p.Pipeline.Env))
	for k := range p.Pipeline.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		env = append(env, k+"="+p.Pipeline.Env[k])
	}
	// This project's credentials only: another project's never reach it.
	for _, k := range slices.Sorted(maps.Keys(p.Pipeline.Secrets)) {
		env = append(env, k+"="+p.Pipeline.Secrets[k])
	}
	env = append(env,
		"AGENTSMITH_TICKET_ID="+t.Ref.ID,
		"AGENTSMITH_PLATFORM="+t.Ref.Platform,
		"AGENTSMITH_PROJECT="+t.Ref.Project,
		"AGENTSMITH_URL="+t.URL,
		"AGENTSMITH_TITLE="+t.Title,
		"AGENTSMITH_ATTEMPT="+strconv.Itoa(attempt),
		"AGENTSMITH_WORKDIR="+workDir,
	)
	stdin, _ := json.Marshal(stdinPayload{
		ID: t.Ref.ID, Platform: t.Ref.Platform, Project: t.Ref.Project,
		Title: t.Title, Body: t.Body, Labels: t.Labels, URL: t.URL, Attempt: attempt,
	})
	return procrun.Spec{
		Argv:       p.Pipeline.Command,
		Env:        env,
		Dir:        workDir,
		Stdin:      stdin,
		Timeout:    p.Pipeline.Timeout,
		Credential: p.Pipeline.RunAs,
	}
}

// handOver makes dir, a ticket's work dir under root, usable by the
// pipeline's user when the pipeline runs as another one: dir is chowned to
// it, and each directory from root down to dir's parent gets search
// permission for others (o+x: enter, not list), which chdir into dir needs.
// Without run_as nothing changes.
func handOver(root, dir string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	// The work dir itself, never a link in its place.
	if err := nofollow.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
		return fmt.Errorf("hand the work dir to uid %d: %w", cred.Uid, err)
	}
	root = filepath.Clean(root)
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("work dir parent: %w", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, fi.Mode().Perm()|0o001); err != nil {
				return fmt.Errorf("let uid %d enter %s: %w", cred.Uid, d, err)
			}
		}
		if d == root || d == filepath.Dir(d) || !strings.HasPrefix(d, root) {
			return nil
		}
	}
}
