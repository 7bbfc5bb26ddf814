// Package readme extracts the fenced code blocks of the README, so tests can
// run and validate the examples exactly as a reader sees them and the two
// cannot drift apart.
package readme

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Block is one fenced code block.
type Block struct {
	Lang    string
	Text    string
	Line    int    // 1-based line of the opening fence
	Section string // the nearest "## " or "### " heading above it
}

// Load reads README.md from the repository root, found by walking up from
// the working directory (a test's package directory).
func Load() (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	return string(b), err
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
	section := ""
	for i, line := range strings.Split(md, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &Block{Lang: strings.TrimSpace(strings.TrimPrefix(line, "```")), Line: i + 1, Section: section}
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
