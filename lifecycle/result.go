package lifecycle

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/agentsmithd/agentsmithd/pkg/redact"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// ResultFileEnv names the file a pipeline may write its result to. The
// file's name starts with ".agentsmith-" so the work branch never commits
// it (pkg/gitws excludes /.agentsmith-*).
const (
	ResultFileEnv  = "AGENTSMITH_RESULT_FILE"
	resultFileName = ".agentsmith-result.json"
)

// Bounds on a pipeline's result: it is the pipeline's output, hostile like
// the rest of it, and it goes into a comment every platform caps.
const (
	MaxResultBytes   = 64 << 10
	maxSummaryRunes  = 4000
	maxResultLinks   = 20
	maxLinkTitleRune = 200
	maxLinkURLBytes  = 2000
)

// ResultFile is where the pipeline of the ticket in workDir may write its
// result ($AGENTSMITH_RESULT_FILE).
func ResultFile(workDir string) string { return filepath.Join(workDir, resultFileName) }

// Result is what a pipeline reports about its run: a summary and links (the
// pull request it opened), shown in the Done and Failed comments.
type Result struct {
	Summary string `json:"summary"`
	Links   []Link `json:"links"`
}

// Link is one link of a Result.
type Link struct {
	Title string `json:"title"`
	URL   string `json:"url"`
}

// Empty reports whether r has nothing to show.
func (r Result) Empty() bool { return strings.TrimSpace(r.Summary) == "" && len(r.Links) == 0 }

// ReadResult reads the result file at path. No file is no result and no
// warning; anything wrong with it (too large, not JSON, a link that is not
// http(s)) is a warning for the comment, never an error: a result is a
// courtesy, and a bad one must not fail a transition.
func ReadResult(path string) (Result, []string) {
	// Not followed through a symlink: the pipeline must not make the daemon
	// show a file only the daemon may read.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return Result{}, nil
	}
	if err != nil {
		return Result{}, []string{"result file: cannot be read"}
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return Result{}, []string{"result file: ignored, not a regular file"}
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxResultBytes+1))
	if err != nil {
		return Result{}, []string{"result file: cannot be read"}
	}
	if len(b) > MaxResultBytes {
		return Result{}, []string{fmt.Sprintf("result file: ignored, larger than %d bytes", MaxResultBytes)}
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return Result{}, []string{"result file: ignored, not valid JSON of the form {\"summary\": ..., \"links\": [{\"title\": ..., \"url\": ...}]}"}
	}
	var warn []string
	r.Summary = strings.TrimSpace(stripControl(strings.ToValidUTF8(r.Summary, "\uFFFD")))
	if utf8.RuneCountInString(r.Summary) > maxSummaryRunes {
		r.Summary = truncateRunes(r.Summary, maxSummaryRunes) + "…"
		warn = append(warn, fmt.Sprintf("result file: summary cut to %d characters", maxSummaryRunes))
	}
	links, dropped := r.Links[:0], 0
	for _, l := range r.Links {
		u, ok := httpURL(l.URL)
		if !ok || len(links) == maxResultLinks {
			dropped++
			continue
		}
		title := strings.TrimSpace(strings.ReplaceAll(stripControl(strings.ToValidUTF8(l.Title, "\uFFFD")), "\n", " "))
		title = truncateRunes(title, maxLinkTitleRune)
		if title == "" {
			title = u
		}
		links = append(links, Link{Title: title, URL: u})
	}
	r.Links = links
	if dropped > 0 {
		warn = append(warn, fmt.Sprintf("result file: %d link(s) left out (only http(s) URLs, at most %d)", dropped, maxResultLinks))
	}
	return r, warn
}

// httpURL returns raw normalised when it is an absolute http(s) URL with a
// host: no javascript:, data: or relative link reaches a comment.
func httpURL(raw string) (string, bool) {
	if len(raw) > maxLinkURLBytes || strings.ContainsAny(raw, " \t\r\n\x00<>\"`") {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return "", false
	}
	// Parentheses would end a Markdown link target early.
	return strings.NewReplacer("(", "%28", ")", "%29").Replace(u.String()), true
}

// renderResult is r as comment text for platform, red's secrets replaced
// before any escaping (escapeFor): Markdown, with every
// character Markdown could read as markup escaped and @mentions broken, on
// GitHub, GitLab and Azure DevOps (which takes the daemon's comments as
// Markdown); plain text on Jira, whose tracker converts the comment to
// wiki markup or ADF and escapes it there (platforms/jira/adf.go), with
// Jira's own mention and code-fence forms broken here.
func renderResult(red *redact.Redactor, platform string, r Result) string {
	if r.Empty() {
		return ""
	}
	esc := func(s string) string { return escapeFor(red, platform, s) }
	var b strings.Builder
	if r.Summary != "" {
		b.WriteString("**Summary**\n\n")
		for _, line := range strings.Split(r.Summary, "\n") {
			b.WriteString(platforms.NoCommandLines(esc(line)) + "\n")
		}
	}
	if len(r.Links) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("**Links**\n\n")
		for _, l := range r.Links {
			if platform == "jira" {
				fmt.Fprintf(&b, "- %s: %s\n", esc(l.Title), l.URL)
			} else {
				fmt.Fprintf(&b, "- [%s](%s)\n", esc(l.Title), l.URL)
			}
		}
	}
	return b.String()
}

// escapeFor is s, text from a pipeline, as comment text for platform: red's
// secrets replaced, then escaped for the platform's markup (see
// renderResult). The order matters: escaping changes a secret's bytes
// ("ghp_x" becomes "ghp\_x"), which no later redaction recognises but the
// tracker renders as the secret again. Every pipeline text a comment shows
// escaped goes through here, so none is escaped unredacted.
func escapeFor(red *redact.Redactor, platform, s string) string {
	s = red.String(s)
	if platform == "jira" {
		return jiraEscape(s)
	}
	return markdownEscape(s)
}

// markdownEscape backslash-escapes every ASCII punctuation character
// CommonMark may treat as markup (CommonMark 0.31 §2.4: any ASCII
// punctuation may be escaped) and puts a zero-width space after "@" so
// no summary mentions (notifies) anyone.
func markdownEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '@':
			b.WriteString("@\u200b")
		case r < 0x80 && strings.ContainsRune("\\`*_{}[]()<>#+-.!|~&\"'=:", r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// jiraEscape breaks the two forms the Jira tracker passes through as
// written, [~user] mentions and ``` code fences, and @mentions, which Jira
// does not resolve in API text but bots and other trackers' mirrors may.
func jiraEscape(s string) string {
	return platforms.NoMentions(strings.NewReplacer("[~", "[\u200b~", "```", "`\u200b``").Replace(s))
}

// removeStale removes a file an earlier attempt's pipeline left (its result
// must not be shown as this attempt's).
func removeStale(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the last attempt's %s: %w", filepath.Base(path), err)
	}
	return nil
}

// noteLines is notes as the comment's list items, one a line.
func noteLines(notes []string) string {
	var b strings.Builder
	for _, n := range notes {
		fmt.Fprintf(&b, "- %s\n", stripControl(n))
	}
	return b.String()
}
