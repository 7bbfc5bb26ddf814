package lifecycle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
	if r, warn := ReadResult(filepath.Join(t.TempDir(), "none")); !r.Empty() || warn != nil {
		t.Errorf("missing file: %+v %v", r, warn)
	}
	for name, content := range map[string]string{
		"not JSON":   `{"summary": "x"`,
		"too large":  `{"summary":"` + strings.Repeat("a", MaxResultBytes) + `"}`,
		"wrong type": `{"summary": 5}`,
	} {
		r, warn := ReadResult(writeResult(t, content))
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
	if r, warn := ReadResult(link); !r.Empty() || len(warn) != 1 {
		t.Errorf("symlinked result: %+v %q", r, warn)
	}
	r, warn := ReadResult(writeResult(t, `{"summary":"`+strings.Repeat("é", maxSummaryRunes+10)+`\u0000","links":[
		{"title":"ok","url":"https://h/pr/(1)"},{"title":"js","url":"javascript:alert(1)"},{"title":"rel","url":"/x"},
		{"title":"creds","url":"https://u:p@h/"},{"title":"","url":"http://h/x"}]}`))
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
		if strings.Contains(md, bad) {
			t.Errorf("markdown carries %q:\n%s", bad, md)
		}
	}
	if !strings.Contains(md, `- [\[t\]\(javascript\:x\)](https://e/pr)`) {
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
