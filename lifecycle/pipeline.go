package lifecycle

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

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
func WorkDir(root string, ref platforms.Ref) string {
	return filepath.Join(root, unsafePath.ReplaceAllString(ref.Project, "_"), TicketDirName(ref.Platform, ref.ID))
}

// TicketDirName is the ticket's directory name under its project's, in the
// work root and the logs dir.
func TicketDirName(platform, id string) string {
	return unsafePath.ReplaceAllString(platform+"_"+id, "_")
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
	env := make([]string, 0, len(inheritedEnv)+len(p.Pipeline.Env)+8)
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
		Argv:    p.Pipeline.Command,
		Env:     env,
		Dir:     workDir,
		Stdin:   stdin,
		Timeout: p.Pipeline.Timeout,
	}
}

// outcomeComment is a failed attempt's comment: headline, result, duration,
// instance, notes, and the output's tail. The tail sits in a code fence
// longer than any backtick run inside it, so pipeline output can never
// break out of the block.
func outcomeComment(headline, instance string, res procrun.Result, notes []string) string {
	var b strings.Builder
	b.WriteString(headline + "\n\n")
	fmt.Fprintf(&b, "- result: %s\n", res.Describe())
	fmt.Fprintf(&b, "- duration: %s\n", res.Duration.Round(time.Millisecond))
	fmt.Fprintf(&b, "- instance: %s\n", instance)
	for _, n := range notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	tail := strings.ToValidUTF8(string(res.Tail), "\uFFFD")
	if tail == "" {
		b.WriteString("\n(no output)\n")
		return b.String()
	}
	fence := strings.Repeat("`", max(3, longestRun(tail, '`')+1))
	fmt.Fprintf(&b, "\nLast %d bytes of output:\n\n%s\n%s\n%s\n", len(res.Tail), fence, strings.TrimRight(tail, "\n"), fence)
	return b.String()
}

func longestRun(s string, c byte) int {
	best, cur := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			cur++
			best = max(best, cur)
		} else {
			cur = 0
		}
	}
	return best
}
