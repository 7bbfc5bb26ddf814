package consumer

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/nofollow"
	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/pkg/redact"
	// Registers the descriptors whose CommentMarkup renderResult and
	// escapeFor read for the platform names these tests use.
	_ "github.com/agentsmithd/agentsmithd/platforms/all"
)

// A tail full of backticks lengthens the fence; the comment must still fit
// the limit, and the fence must be chosen after the tail was cut, so output
// that was cut away does not lengthen it.
func TestOutcomeCommentFitsTheLimit(t *testing.T) {
	const limit = 2000
	cases := map[string]string{
		"backticks":        strings.Repeat("`", 5000),
		"backtick lines":   strings.Repeat("````````````````````````````````\n", 500),
		"plain":            strings.Repeat("x", 100_000),
		"multibyte":        strings.Repeat("é", 10_000),
		"long run cut off": strings.Repeat("`", 3000) + "\n" + strings.Repeat("y", 3000),
	}
	for name, tail := range cases {
		t.Run(name, func(t *testing.T) {
			c := outcomeComment("**agent-smith**: pipeline failed", "i-1", procrun.Result{Tail: []byte(tail), ExitCode: 1}, nil, limit)
			if n := utf8.RuneCountInString(c); n > limit {
				t.Fatalf("comment has %d characters, limit %d", n, limit)
			}
			if !strings.HasPrefix(c, "**agent-smith**: pipeline failed") {
				t.Fatalf("headline lost: %.80q", c)
			}
		})
	}
	c := outcomeComment("h", "i", procrun.Result{Tail: []byte(cases["long run cut off"])}, nil, limit)
	if strings.Contains(c, "````") {
		t.Errorf("the fence was chosen before the tail was cut (or the cut kept the backticks):\n%s", c)
	}
	if !strings.Contains(c, "```\nyyyy") {
		t.Errorf("the kept tail is not fenced with three backticks:\n%.200s", c)
	}
}

func TestOutcomeCommentStripsControlCharacters(t *testing.T) {
	tail := "ok\tcol\r\n\x1b]52;c;ZXZpbA==\x07\x00bell\x7f\n"
	c := outcomeComment("h\x1b[2J", "i", procrun.Result{Tail: []byte(tail)}, []string{"note\x00"}, 10_000)
	for _, r := range c {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f {
			t.Fatalf("control character %U in comment %q", r, c)
		}
	}
	if !strings.Contains(c, "ok\tcol\n") || !strings.Contains(c, "]52;c;ZXZpbA==bell") {
		t.Errorf("newline, tab or text lost: %q", c)
	}
}

func TestShortOutcomeCommentHasNoOutput(t *testing.T) {
	c := shortOutcomeComment("h", "i", procrun.Result{Tail: []byte("secret output")}, nil, 10_000)
	if strings.Contains(c, "secret output") || !strings.Contains(c, "output omitted") {
		t.Errorf("short comment: %q", c)
	}
}

// commandLine is a line a tracker or a bot would read as a command.
var commandLine = regexp.MustCompile(`(?m)^[ \t]*/`)

// On every platform, the comments a run posts carry no command line and no
// mention from the pipeline, and no secret.
func TestRunCommentsCarryNoCommandMentionOrSecret(t *testing.T) {
	const secret = "hunter2-very-secret"
	red := redact.New(secret)
	hostile := "ok " + secret + "\n/close\n  /retitle pwned\n@dependabot merge\n[~accountid:123] hi"
	res := procrun.Result{ExitCode: 1, Tail: []byte(hostile)}
	for _, platform := range []string{"github", "gitlab", "azuredevops", "jira"} {
		result, _ := redactResult(red, Result{Summary: hostile, Links: []Link{{Title: "t " + secret, URL: "https://x.example/?k=" + secret}}})
		head := "**agent-smith**: pipeline failed\n\n" + renderResult(red, platform, result)
		bodies := map[string]string{
			"failure": outcomeComment(head, "i", res, nil, 65536),
			// Git's stderr on a failed Prepare and the save's error quote
			// what the pipeline named.
			"failure to start": outcomeComment(head, "i", procrun.Result{ExitCode: -1, Err: errors.New(hostile)}, []string{"not pushed (" + hostile + ")"}, 65536),
			"progress":         progressBody("agent-smith", 1, "i", hostile),
		}
		for name, b := range bodies {
			b = lifecycle.SafeComment(red, b)
			if commandLine.MatchString(b) || strings.Contains(b, "@dependabot") || strings.Contains(b, secret) {
				t.Errorf("%s %s comment:\n%s", platform, name, b)
			}
		}
	}
}

// A secret that a part escaped for the markup before it was redacted
// ("ghp\_x", rendered as "ghp_x") is caught by lifecycle.SafeComment's last pass: its
// line is withheld, and the rest of the comment is kept. (Jira's escape
// leaves the secret as it is, for the Redactor itself.)
func TestSafeCommentCatchesAnEscapedSecret(t *testing.T) {
	const secret = "ghp_S3cr3t-T0ken_leak9876"
	red := redact.New(secret)
	for _, platform := range []string{"github", "jira"} {
		body := "**agent-smith**: pipeline failed\n- note: " + escapeFor(nil, platform, "invalid path '"+secret+"/.GIT/x' @"+secret) + "\n- kept"
		got := lifecycle.SafeComment(red, body)
		if strings.Contains(strings.NewReplacer(`\`, "", "\u200b", "").Replace(got), secret) {
			t.Errorf("%s: the comment renders the secret:\n%s", platform, got)
		}
		if !strings.Contains(got, "**agent-smith**: pipeline failed\n") || !strings.HasSuffix(got, "\n- kept") {
			t.Errorf("%s: more than the secret's line withheld:\n%s", platform, got)
		}
	}
}

func writeResult(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), resultFileName)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A bad result file is a warning line, never an error and never shown raw.
func TestReadResultWarnsOnBadFiles(t *testing.T) {
	if r, warn := ReadResult(filepath.Join(t.TempDir(), "none"), -1); !r.Empty() || warn != nil {
		t.Errorf("missing file: %+v %v", r, warn)
	}
	for name, content := range map[string]string{
		"not JSON":   `{"summary": "x"`,
		"too large":  `{"summary":"` + strings.Repeat("a", MaxResultBytes) + `"}`,
		"wrong type": `{"summary": 5}`,
	} {
		r, warn := ReadResult(writeResult(t, content), -1)
		if !r.Empty() || len(warn) != 1 || !strings.HasPrefix(warn[0], "result file: ignored") {
			t.Errorf("%s: %+v %q", name, r, warn)
		}
	}
	// A symlink to a file only the daemon may read is not followed.
	secret := writeResult(t, `{"summary":"the daemon's secret"}`)
	link := filepath.Join(t.TempDir(), resultFileName)
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	if r, warn := ReadResult(link, -1); !r.Empty() || len(warn) != 1 {
		t.Errorf("symlinked result: %+v %q", r, warn)
	}
	r, warn := ReadResult(writeResult(t, `{"summary":"`+strings.Repeat("é", maxSummaryRunes+10)+`\u0000","links":[
		{"title":"ok","url":"https://h/pr/(1)"},{"title":"js","url":"javascript:alert(1)"},{"title":"rel","url":"/x"},
		{"title":"creds","url":"https://u:p@h/"},{"title":"","url":"http://h/x"}]}`), os.Geteuid())
	if got := len([]rune(r.Summary)); got != maxSummaryRunes+1 || strings.ContainsRune(r.Summary, 0) {
		t.Errorf("summary of %d runes, or with a NUL", got)
	}
	if len(r.Links) != 2 || r.Links[0].URL != "https://h/pr/%281%29" || r.Links[1].Title != "http://h/x" {
		t.Errorf("links = %+v", r.Links)
	}
	if len(warn) != 2 || !strings.Contains(warn[1], "3 link(s) left out") {
		t.Errorf("warnings = %q", warn)
	}
}

// The result is escaped for the platform's markup: Markdown cannot open a
// link, an image, a heading, raw HTML or a mention on GitHub, GitLab or
// Azure DevOps; on Jira (whose tracker escapes wiki markup itself) mentions
// and code fences are broken.
func TestRenderResultEscapesForEachPlatform(t *testing.T) {
	r := Result{Summary: "# x\n![img](https://e/x.png) <script>@bob</script>\n```", Links: []Link{{Title: "[t](javascript:x)", URL: "https://e/pr"}}}
	md := renderResult(nil, "github", r)
	for _, bad := range []string{"\n# x", "![img]", "<script>", "@bob", "[t](javascript"} {
		if strings.Contains(strings.ReplaceAll(md, `\<`, ""), bad) {
			t.Errorf("markdown carries %q:\n%s", bad, md)
		}
	}
	if !strings.Contains(md, `- [\[t\](javascript:x)](https://e/pr)`) {
		t.Errorf("link not rendered as an escaped Markdown link:\n%s", md)
	}
	jira := renderResult(nil, "jira", Result{Summary: "ping [~admin]\n```", Links: r.Links})
	if strings.Contains(jira, "[~admin]") || strings.Contains(jira, "```") || !strings.Contains(jira, "- [t](javascript:x): https://e/pr") {
		t.Errorf("jira:\n%s", jira)
	}
	if renderResult(nil, "gitlab", Result{}) != "" {
		t.Error("an empty result renders something")
	}
}

func TestFailureCommentFenceCannotBeEscaped(t *testing.T) {
	tail := "line\n````\nmore ``` output"
	got := longestRun(tail, '`')
	if got != 4 {
		t.Fatalf("longestRun = %d", got)
	}
}

// A URL in pipeline text is not a link in the daemon's comment on any
// platform (the text keeps it, broken by a zero-width space before "//"
// and after a leading "www"), while a link the daemon structures from the
// result file stays one.
func TestPipelineURLsAreNotLinks(t *testing.T) {
	const zw = "\u200b"
	r := Result{
		Summary: "Session expired: log in at https://evil.example/login or WWW.evil.example/x (ftp://evil.example too)",
		Links:   []Link{{Title: "Pull request", URL: "https://github.example/acme/app/pull/7"}},
	}
	for _, platform := range []string{"github", "gitlab", "azuredevops", "jira"} {
		got := renderResult(nil, platform, r)
		for _, bad := range []string{"https://evil", "WWW.evil", "ftp://evil"} {
			if strings.Contains(got, bad) {
				t.Errorf("%s: pipeline text keeps the link %q:\n%s", platform, bad, got)
			}
		}
		for _, want := range []string{"https:" + zw + "//evil.example/login", "WWW" + zw + ".evil.example/x", "ftp:" + zw + "//evil.example"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: %q missing, the text should read as written:\n%s", platform, want, got)
			}
		}
		link := "- [Pull request](https://github.example/acme/app/pull/7)"
		if platform == "jira" {
			link = "- Pull request: https://github.example/acme/app/pull/7"
		}
		if !strings.Contains(got, link) {
			t.Errorf("%s: the result file's link is no longer a link (%q):\n%s", platform, link, got)
		}
	}
	for in, want := range map[string]string{
		"awww.example and www-x.example": "awww.example and www-x.example",
		"see http:// and wwwx.y":         "see http:" + zw + "// and wwwx.y",
	} {
		if got := breakAutolinks(in); got != want {
			t.Errorf("breakAutolinks(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestReadResultRefusesFilesNotTheRunsOwn: a result file hard-linked to a
// file elsewhere, a FIFO, a directory or a file of another uid is refused
// unread, the warning naming why; the run's uid reads its own file.
func TestReadResultRefusesFilesNotTheRunsOwn(t *testing.T) {
	secret := writeResult(t, `{"summary":"TOPSECRET"}`)
	dir := t.TempDir()
	path := filepath.Join(dir, resultFileName)
	check := func(name, want string) {
		t.Helper()
		done := make(chan struct{})
		var r Result
		var warn []string
		var err error
		go func() { defer close(done); r, warn, err = readResult(path, os.Geteuid()) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: readResult hangs", name)
		}
		if !r.Empty() || !errors.Is(err, nofollow.ErrRefused) || len(warn) != 1 || warn[0] != want {
			t.Errorf("%s: %+v %q %v; want refused with %q", name, r, warn, err, want)
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(secret, path); err != nil {
		t.Fatal(err)
	}
	check("hard link", "result file refused: hard link (2 links)")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	check("FIFO", "result file refused: not a regular file (a FIFO)")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	check("directory", "result file refused: not a regular file (a directory)")
	if err := os.Symlink(secret, path); err != nil {
		t.Fatal(err)
	}
	check("symlink", "result file refused: a symbolic link")
	if os.Geteuid() == 0 {
		if err := os.WriteFile(path, []byte(`{"summary":"theirs"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if r, warn := ReadResult(path, 4242); !r.Empty() || len(warn) != 1 || warn[0] != "result file refused: owned by uid 0, not the run's uid 4242" {
			t.Errorf("root's file for a run as uid 4242: %+v %q; want it refused", r, warn)
		}
		if err := os.Chown(path, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		if r, warn := ReadResult(path, 4242); r.Summary != "theirs" || warn != nil {
			t.Errorf("uid 4242's own file: %+v %q", r, warn)
		}
		check("another uid's", "result file refused: owned by uid 4242, not the run's uid 0")
	}
}
