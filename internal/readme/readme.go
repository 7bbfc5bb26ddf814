// Package readme extracts the fenced code blocks of the README and of the
// docs/*.md pages it links to, so tests can run and validate the examples
// exactly as a reader sees them and the two cannot drift apart.
package readme

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Block is one fenced code block.
type Block struct {
	Lang    string
	Text    string
	Line    int    // 1-based line of the opening fence, in File
	Section string // the nearest "## " or "### " heading above it
	File    string // the file holding it, relative to the root ("README.md", "docs/configuration.md"); set by Load
}

// fileMarker starts each file in Load's text; Blocks reads it to set
// Block.File and restart line numbers and sections.
const fileMarker = "<!-- readme.File: "

// Files are the documents Load reads, relative to the repository root:
// README.md first, then docs/*.md in name order.
func Files() ([]string, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	sort.Strings(docs)
	out := []string{"README.md"}
	for _, d := range docs {
		out = append(out, filepath.ToSlash(filepath.Join("docs", filepath.Base(d))))
	}
	return out, nil
}

// Load reads README.md and docs/*.md (Files) from the repository root,
// found by walking up from the working directory (a test's package
// directory), as one text in which each file starts with a marker line
// that Blocks turns into Block.File.
func Load() (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	files, err := Files()
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return "", err
		}
		sb.WriteString(fileMarker + f + " -->\n")
		sb.Write(b)
		if len(b) > 0 && b[len(b)-1] != '\n' {
			sb.WriteByte('\n')
		}
	}
	return sb.String(), nil
}

// LoadDoc reads one document, relative to the repository root
// ("docs/configuration.md"), marked as Load marks it.
func LoadDoc(name string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		return "", err
	}
	return fileMarker + name + " -->\n" + string(b), nil
}

// Root is the repository root (the directory holding go.mod and README.md).
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Blocks returns the fenced blocks of md in order. A fence is a line
// starting with ``` at column 0; indented fences are not blocks here.
func Blocks(md string) []Block {
	var out []Block
	var cur *Block
	var body []string
	section, file, first := "", "", 0
	for i, line := range strings.Split(md, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, fileMarker):
			file = strings.TrimSuffix(strings.TrimPrefix(line, fileMarker), " -->")
			section, first = "", i+1
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &Block{Lang: strings.TrimSpace(strings.TrimPrefix(line, "```")), Line: i + 1 - first, Section: section, File: file}
			body = nil
		case cur != nil && strings.TrimSpace(line) == "```":
			cur.Text = strings.Join(body, "\n") + "\n"
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body = append(body, line)
		case strings.HasPrefix(line, "## ") || strings.HasPrefix(line, "### "):
			section = strings.TrimSpace(strings.TrimLeft(line, "#"))
		}
	}
	return out
}
