package jira

import (
	"encoding/json"
	"regexp"
	"strings"
)

// Jira Cloud's REST v3 takes and returns rich text (comment bodies,
// descriptions) only as Atlassian Document Format, a JSON tree
// (https://developer.atlassian.com/cloud/jira/platform/apis/document/structure/).
// The daemon's comments are Markdown-ish plain text; the one structure worth
// keeping is the ``` fence around a pipeline's output tail, which becomes a
// codeBlock node so Jira shows it monospaced. Everything else is paragraphs
// of text with hard breaks, which Jira renders as written.

// ADFNode is one node of an ADF document.
type ADFNode struct {
	Type    string         `json:"type"`
	Version int            `json:"version,omitempty"` // only on the doc root
	Attrs   map[string]any `json:"attrs,omitempty"`
	Content []ADFNode      `json:"content,omitempty"`
	Text    string         `json:"text,omitempty"`
}

// textBlock is one block of the daemon's comment text: a paragraph (its
// lines) or a ``` fenced code block (its language and lines).
type textBlock struct {
	code  bool
	lang  string
	lines []string
}

// splitBlocks cuts text into paragraphs at blank lines and into code blocks
// at ``` fences; an unclosed fence runs to the end. As in Markdown
// (CommonMark, which GitHub, GitLab and Azure DevOps render), a block opened
// by n backticks closes only on a line of at least n backticks and nothing
// else, so pipeline output inside a longer fence cannot close it.
func splitBlocks(text string) []textBlock {
	var out []textBlock
	var para []string
	flush := func() {
		if len(para) > 0 {
			out = append(out, textBlock{lines: para})
			para = nil
		}
	}
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if n := leadingRun(line, '`'); n >= 3 && !strings.Contains(line[n:], "`") {
			flush()
			b := textBlock{code: true, lang: strings.TrimSpace(line[n:])}
			for i++; i < len(lines) && !closesFence(lines[i], n); i++ {
				b.lines = append(b.lines, lines[i])
			}
			out = append(out, b)
			continue
		}
		if line == "" {
			flush()
			continue
		}
		para = append(para, line)
	}
	flush()
	return out
}

// leadingRun is the number of c at the start of s.
func leadingRun(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

// closesFence reports whether line closes a fence of n backticks: only
// backticks, at least n, spaces around allowed.
func closesFence(line string, n int) bool {
	l := strings.TrimSpace(line)
	return len(l) >= n && leadingRun(l, '`') == len(l)
}

// fenceFor is a backtick fence longer than any backtick run in code.
func fenceFor(code string) string {
	longest, cur := 0, 0
	for i := 0; i < len(code); i++ {
		if code[i] == '`' {
			cur++
			longest = max(longest, cur)
		} else {
			cur = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// TextToADF converts text to an ADF document for Jira Cloud: blank-line-
// separated blocks become paragraphs, single newlines hard breaks, and ```
// fenced blocks codeBlock nodes (with the fence's language, if any).
// ADFToText reverses it for text without trailing spaces or runs of blank
// lines.
func TextToADF(text string) ADFNode {
	doc := ADFNode{Type: "doc", Version: 1}
	for _, b := range splitBlocks(text) {
		if b.code {
			doc.Content = append(doc.Content, codeBlock(b.lang, strings.Join(b.lines, "\n")))
		} else {
			doc.Content = append(doc.Content, paragraph(b.lines))
		}
	}
	if len(doc.Content) == 0 {
		doc.Content = []ADFNode{{Type: "paragraph"}}
	}
	return doc
}

// TextToWiki converts text to Jira Data Center's wiki markup, which REST v2
// comment bodies are rendered as: ``` fenced blocks become {code:lang} or
// {noformat} blocks, with every "{" inside escaped so output containing
// "{noformat}" or "{code}" cannot close the block and have what follows
// rendered as markup. Paragraph text is escaped too (macros, links,
// images, tables, headings and lists), except whole-word Jira mentions
// "[~name]", which a project's escalate.mention may configure.
func TextToWiki(text string) string {
	var parts []string
	for _, b := range splitBlocks(text) {
		switch {
		case !b.code:
			lines := make([]string, len(b.lines))
			for i, l := range b.lines {
				lines[i] = wikiEscapeLine(l)
			}
			parts = append(parts, strings.Join(lines, "\n"))
		case wikiLang.MatchString(b.lang):
			parts = append(parts, "{code:"+b.lang+"}\n"+wikiEscapeCode(b.lines)+"\n{code}")
		default:
			parts = append(parts, "{noformat}\n"+wikiEscapeCode(b.lines)+"\n{noformat}")
		}
	}
	return strings.Join(parts, "\n\n")
}

// wikiLang is a {code} language Jira knows by name; anything else (which
// could carry macro syntax) makes the block {noformat}.
var wikiLang = regexp.MustCompile(`^[A-Za-z0-9+#-]{1,20}$`)

// wikiMention is a Jira mention, kept as written in paragraphs.
var wikiMention = regexp.MustCompile(`^\[~[A-Za-z0-9._:@-]+\]$`)

// wikiBlockStart matches a line Jira would render as a block: heading,
// quote, list, table row, horizontal rule.
var wikiBlockStart = regexp.MustCompile(`^\s*(h[1-6]\.|bq\.|[*#-]+\s|----|\|)`)

var wikiInline = strings.NewReplacer(`\`, `\\`, `{`, `\{`, `}`, `\}`, `[`, `\[`, `]`, `\]`, `!`, `\!`, `|`, `\|`)

func wikiEscapeLine(line string) string {
	words := strings.Split(line, " ")
	for i, w := range words {
		if !wikiMention.MatchString(w) {
			words[i] = wikiInline.Replace(w)
		}
	}
	out := strings.Join(words, " ")
	if wikiBlockStart.MatchString(out) {
		out = `\` + strings.TrimLeft(out, " \t")
	}
	return out
}

func wikiEscapeCode(lines []string) string {
	return strings.ReplaceAll(strings.Join(lines, "\n"), "{", `\{`)
}

func paragraph(lines []string) ADFNode {
	p := ADFNode{Type: "paragraph"}
	for i, l := range lines {
		if i > 0 {
			p.Content = append(p.Content, ADFNode{Type: "hardBreak"})
		}
		p.Content = append(p.Content, ADFNode{Type: "text", Text: l})
	}
	return p
}

func codeBlock(lang, code string) ADFNode {
	n := ADFNode{Type: "codeBlock"}
	if lang != "" {
		n.Attrs = map[string]any{"language": lang}
	}
	if code != "" { // ADF refuses empty text nodes
		n.Content = []ADFNode{{Type: "text", Text: code}}
	}
	return n
}

// ADFToText flattens an ADF document to text: blocks separated by a blank
// line, hard breaks as newlines, code blocks fenced with ```. Unknown nodes
// contribute their text content. Invalid JSON yields "".
func ADFToText(raw json.RawMessage) string {
	var doc ADFNode
	if err := json.Unmarshal(raw, &doc); err != nil {
		return ""
	}
	return strings.Join(blocks(doc.Content), "\n\n")
}

// blocks renders each block node of content.
func blocks(content []ADFNode) []string {
	var out []string
	for _, n := range content {
		switch n.Type {
		case "paragraph", "heading":
			out = append(out, inline(n.Content))
		case "codeBlock":
			lang, _ := n.Attrs["language"].(string)
			code := inline(n.Content)
			fence := fenceFor(code)
			out = append(out, fence+lang+"\n"+code+"\n"+fence)
		case "text", "hardBreak", "mention", "emoji", "inlineCard":
			out = append(out, inline([]ADFNode{n}))
		default: // lists, quotes, panels, tables: their blocks in order
			out = append(out, blocks(n.Content)...)
		}
	}
	return out
}

// inline renders inline nodes.
func inline(content []ADFNode) string {
	var b strings.Builder
	for _, n := range content {
		switch n.Type {
		case "text":
			b.WriteString(n.Text)
		case "hardBreak":
			b.WriteByte('\n')
		case "mention", "emoji":
			s, _ := n.Attrs["text"].(string)
			b.WriteString(s)
		case "inlineCard":
			s, _ := n.Attrs["url"].(string)
			b.WriteString(s)
		default:
			b.WriteString(inline(n.Content))
		}
	}
	return b.String()
}
