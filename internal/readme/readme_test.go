package readme

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// maxReadmeLines keeps README.md a first screen and a map: what it is, the
// two commands, the first project and links; everything else lives in docs/.
const maxReadmeLines = 200

func TestReadmeIsShort(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, want at most %d: move detail into docs/", n, maxReadmeLines)
	}
}

// The README opens with the two commands a newcomer runs on a fresh
// machine, and the test command is the one CI (.ci/run) runs.
func TestReadmeOpensWithDemoAndTests(t *testing.T) {
	md, err := LoadDoc("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := Blocks(md)
	if len(blocks) == 0 || blocks[0].Line > 15 {
		t.Fatalf("README.md's first fenced block should be within its first 15 lines: %+v", blocks)
	}
	first := blocks[0].Text
	const demo, test = "go run ./cmd/agentsmithd demo", "go test -race -count=1 -timeout 20m ./..."
	for _, cmd := range []string{demo, test} {
		if !strings.Contains(first, cmd) {
			t.Errorf("README.md's first block lacks %q:\n%s", cmd, first)
		}
	}
	root, _ := Root()
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	// .ci/run runs the command itself, bare or as the condition that
	// prints the kept chaos work dirs when it fails.
	runs := false
	for _, line := range strings.Split(string(ci), "\n") {
		line = strings.TrimSpace(line)
		if line == test || line == "if ! "+test+"; then" {
			runs = true
		}
	}
	if !runs {
		t.Errorf(".ci/run does not run README's test command %q", test)
	}
}

func TestBlocksCarryTheirFile(t *testing.T) {
	md := fileMarker + "README.md -->\n# t\n## A\n```sh\none\n```\n" +
		fileMarker + "docs/x.md -->\n# x\n\n```yaml\ntwo\n```\n## B\n```\nthree\n```\n"
	got := Blocks(md)
	want := []Block{
		{Lang: "sh", Text: "one\n", Line: 3, Section: "A", File: "README.md"},
		{Lang: "yaml", Text: "two\n", Line: 3, Section: "", File: "docs/x.md"},
		{Lang: "", Text: "three\n", Line: 7, Section: "B", File: "docs/x.md"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d blocks, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("block %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// Load holds every page, so a test finds a block wherever it moved.
func TestLoadReadsReadmeAndDocs(t *testing.T) {
	md, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{}
	for _, b := range Blocks(md) {
		files[b.File] = true
	}
	for _, f := range []string{"README.md", "docs/configuration.md", "docs/pipelines.md"} {
		if !files[f] {
			t.Errorf("Load's blocks hold none from %s (files seen: %v)", f, files)
		}
	}
}

var (
	linkRE   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	inlineRE = regexp.MustCompile("`[^`]*`")
)

// slug is GitHub's heading anchor: lower case, punctuation other than '-'
// and '_' dropped, spaces as '-'.
func slug(heading string) string {
	var sb strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			sb.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// anchors are the heading anchors of a markdown file, with GitHub's -1, -2
// suffixes for repeated headings.
func anchors(md string) map[string]bool {
	out, seen := map[string]bool{}, map[string]int{}
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimLeft(line, "#")
		if !strings.HasPrefix(h, " ") {
			continue
		}
		s := slug(inlineRE.ReplaceAllStringFunc(h, func(c string) string { return strings.Trim(c, "`") }))
		if n := seen[s]; n > 0 {
			out[s+"-"+itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// Every relative link in README.md and docs/*.md names a file that exists
// and, into a markdown file, a heading that exists.
func TestRelativeLinksResolve(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	files, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		fenced := false
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "```") {
				fenced = !fenced
				continue
			}
			if fenced {
				continue
			}
			for _, m := range linkRE.FindAllStringSubmatch(inlineRE.ReplaceAllString(line, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				dest := filepath.Join(root, filepath.FromSlash(f))
				if path != "" {
					dest = filepath.Join(filepath.Dir(dest), filepath.FromSlash(path))
				}
				checked++
				data, err := os.ReadFile(dest)
				if err != nil {
					if fi, serr := os.Stat(dest); serr == nil && fi.IsDir() && anchor == "" {
						continue
					}
					t.Errorf("%s:%d: link %q: %v", f, i+1, target, err)
					continue
				}
				if anchor != "" && strings.HasSuffix(dest, ".md") && !anchors(string(data))[anchor] {
					t.Errorf("%s:%d: link %q: no heading with anchor #%s in %s", f, i+1, target, anchor, path)
				}
			}
		}
	}
	if checked < 10 {
		t.Errorf("checked %d links, want at least 10 (is the link pattern still right?)", checked)
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		" Platform setup":                 "platform-setup",
		" Retries, priorities and limits": "retries-priorities-and-limits",
		" An organisation's repositories": "an-organisations-repositories",
		" Limitations (today)":            "limitations-today",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every path docs/contributing.md's Layout names exists.
func TestLayoutNamesExistingPaths(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	md, err := LoadDoc("docs/contributing.md")
	if err != nil {
		t.Fatal(err)
	}
	var layout string
	for _, b := range Blocks(md) {
		if b.Section == "Layout" {
			layout = b.Text
			break
		}
	}
	n := 0
	for _, line := range strings.Split(layout, "\n") {
		if line == "" || line[0] == ' ' {
			continue
		}
		path := strings.Fields(line)[0]
		n++
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(path))); err != nil {
			t.Errorf("Layout names %s: %v", path, err)
		}
	}
	if n < 20 {
		t.Errorf("Layout lists %d paths, want at least 20 (is its block still under \"## Layout\"?)", n)
	}
}
