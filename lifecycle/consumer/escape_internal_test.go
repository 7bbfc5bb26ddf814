package consumer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Pipeline text is escaped only where a character would start markup: a
// path or branch name reads as written (in the tracker and in plain-text
// notification e-mails), while everything that could open markup, HTML, a
// mention or a block stays inert.
func TestMarkdownEscapeOnlyWhereMarkupStarts(t *testing.T) {
	for in, want := range map[string]string{
		// Read as written.
		"CHANGELOG.md":                 "CHANGELOG.md",
		"agent-smith/demo-webshop-2":   "agent-smith/demo-webshop-2",
		"ghp_x and snake_case_name":    "ghp_x and snake_case_name",
		"v1.5 (see # 12): done! a+b=c": "v1.5 (see # 12): done! a+b=c",
		"2026-11-27 12:00":             "2026-11-27 12:00",
		// Escaped everywhere.
		"**bold** and `code`":       `\*\*bold\*\* and \` + "`code\\`",
		"[x](http://e.com) ![i](u)": `\[x\](http://e.com) !\[i\](u)`,
		"<img src=x onerror=y>":     `\<img src=x onerror=y>`,
		"&#64;admin &lt;b&gt;":      "\\&#\u200b64;admin \\&lt;b\\&gt;",
		"a|b ~~gone~~ back\\slash":  `a\|b \~\~gone\~\~ back\\slash`,
		"_emph_ x _ y":              `\_emph\_ x \_ y`,
		"@alice":                    "@\u200balice",
		// References that would link (and notify) another issue, merge
		// request, milestone or snippet: GitLab's #12 !12 %"m" $3, GitHub's
		// #12 and owner/repo#12.
		"see #12, g/p#3, !4, %\"v1\", $5": "see #\u200b12, g/p#\u200b3, !\u200b4, %\u200b\"v1\", $\u200b5",
		// Escaped at the start of a line only.
		"# title\n  - item\n+ item\n> quote\n===\n": "\\# title\n  \\- item\n\\+ item\n\\> quote\n\\===\n",
		"1. first\n 2) second\n3.5 GB":              "1\\. first\n 2\\) second\n3.5 GB",
		"a - b # c > d":                             "a - b # c > d",
	} {
		if got := markdownEscape(in); got != want {
			t.Errorf("markdownEscape(%q) = %q, want %q", in, got, want)
		}
	}
}

// The escaped text renders back to the input: every backslash escapes
// punctuation and only the zero-width spaces after "@" are added.
func FuzzMarkdownEscapeRendersBack(f *testing.F) {
	for _, s := range []string{"CHANGELOG.md", "1. a\n- b", "<a href=x>", "@x _y_ \\", "1)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if utf8.ValidString(s) && !strings.Contains(s, "\u200b") {
			if got := readEscapes(markdownEscape(s)); got != s {
				t.Errorf("rendered(markdownEscape(%q)) = %q", s, got)
			}
		}
		out := markdownEscape(s)
		if strings.Contains(strings.ReplaceAll(out, `\<`, ""), "<") {
			t.Errorf("markdownEscape(%q) = %q leaves a <", s, out)
		}
	})
}

// readEscapes is s as CommonMark reads its backslash escapes, without the
// zero-width spaces.
func readEscapes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", s[i+1]) >= 0 {
			i++
		}
		b.WriteByte(s[i])
	}
	return strings.ReplaceAll(b.String(), "\u200b", "")
}
