package jira

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestTextToADF(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"", `{"type":"doc","version":1,"content":[{"type":"paragraph"}]}`},
		{"one line — 日本語", `{"type":"doc","version":1,"content":[{"type":"paragraph","content":[{"type":"text","text":"one line — 日本語"}]}]}`},
		{"a\nb\n\nc", `{"type":"doc","version":1,"content":[
			{"type":"paragraph","content":[{"type":"text","text":"a"},{"type":"hardBreak"},{"type":"text","text":"b"}]},
			{"type":"paragraph","content":[{"type":"text","text":"c"}]}]}`},
		{"Tail:\n```text\nline 1\n\nline 3\n```\nafter", `{"type":"doc","version":1,"content":[
			{"type":"paragraph","content":[{"type":"text","text":"Tail:"}]},
			{"type":"codeBlock","attrs":{"language":"text"},"content":[{"type":"text","text":"line 1\n\nline 3"}]},
			{"type":"paragraph","content":[{"type":"text","text":"after"}]}]}`},
		{"```\n```", `{"type":"doc","version":1,"content":[{"type":"codeBlock"}]}`},
		{"```\nunclosed", `{"type":"doc","version":1,"content":[{"type":"codeBlock","content":[{"type":"text","text":"unclosed"}]}]}`},
	} {
		b, err := json.Marshal(TextToADF(c.text))
		if err != nil {
			t.Fatal(err)
		}
		if !jsonEqual(string(b), c.want) {
			t.Errorf("TextToADF(%q) = %s\nwant %s", c.text, b, c.want)
		}
	}
}

func TestADFRoundTrip(t *testing.T) {
	for _, text := range []string{
		"Pipeline run `42` queued — 日本語 **ok**",
		"a\nb\n\nc",
		"Run failed (exit 2).\n\n```\nerror: boom\n  at main.go:12\n```\n\nRetry with the label.",
		"```go\nfmt.Println()\n```",
	} {
		b, _ := json.Marshal(TextToADF(text))
		if got := ADFToText(b); got != text {
			t.Errorf("round trip of %q = %q", text, got)
		}
	}
}

func TestADFToText(t *testing.T) {
	doc := `{"type":"doc","version":1,"content":[
		{"type":"heading","attrs":{"level":2},"content":[{"type":"text","text":"Goal"}]},
		{"type":"bulletList","content":[
			{"type":"listItem","content":[{"type":"paragraph","content":[{"type":"text","text":"one "},{"type":"mention","attrs":{"id":"1","text":"@Dana"}}]}]},
			{"type":"listItem","content":[{"type":"paragraph","content":[{"type":"text","text":"two","marks":[{"type":"strong"}]},{"type":"emoji","attrs":{"shortName":":ok:","text":"👌"}}]}]}]},
		{"type":"paragraph","content":[{"type":"inlineCard","attrs":{"url":"https://example.com/x"}}]}]}`
	want := "Goal\n\none @Dana\n\ntwo👌\n\nhttps://example.com/x"
	if got := ADFToText(json.RawMessage(doc)); got != want {
		t.Errorf("ADFToText = %q, want %q", got, want)
	}
	for _, bad := range []string{"", "{", `"text"`, "[1]"} {
		if got := ADFToText(json.RawMessage(bad)); got != "" {
			t.Errorf("ADFToText(%q) = %q, want empty", bad, got)
		}
	}
}

func TestTextToWiki(t *testing.T) {
	for text, want := range map[string]string{
		"plain *text* — 日本語":               "plain *text* — 日本語",
		"Failed:\n```\nexit 1\n```\nretry": "Failed:\n\n{noformat}\nexit 1\n{noformat}\n\nretry",
		"```go\nfmt.Println()\n```":        "{code:go}\nfmt.Println()\n{code}",
		"a\nb\n\n\nc":                      "a\nb\n\nc",
	} {
		if got := TextToWiki(text); got != want {
			t.Errorf("TextToWiki(%q) = %q, want %q", text, got, want)
		}
	}
}

// Pipeline output inside a fence cannot close the block: not with a shorter
// backtick line (Markdown's rule), and not with {noformat} or {code} in the
// wiki markup Jira Data Center renders.
func TestFencedOutputCannotBreakOut(t *testing.T) {
	text := "**agent-smith**: failed\n\n````\n```\nh1. Owned [~admin] !http://evil.example/x.png!\n{noformat}\n{code}\n```\n````\n\nafter"
	blocks := splitBlocks(text)
	if len(blocks) != 3 || !blocks[1].code || len(blocks[1].lines) != 5 {
		t.Fatalf("blocks: %+v", blocks)
	}
	wiki := TextToWiki(text)
	want := "**agent-smith**: failed\n\n{noformat}\n```\nh1. Owned [~admin] !http://evil.example/x.png!\n\\{noformat}\n\\{code}\n```\n{noformat}\n\nafter"
	if wiki != want {
		t.Errorf("TextToWiki =\n%s\nwant\n%s", wiki, want)
	}
	if n := strings.Count(wiki, "{noformat}") - strings.Count(wiki, `\{noformat}`); n != 2 {
		t.Errorf("%d unescaped {noformat} markers, want 2 (open and close)", n)
	}
	b, _ := json.Marshal(TextToADF(text))
	var doc ADFNode
	_ = json.Unmarshal(b, &doc)
	if len(doc.Content) != 3 || doc.Content[1].Type != "codeBlock" {
		t.Errorf("ADF: %s", b)
	}
	if got := ADFToText(b); !strings.Contains(got, "````\n```\nh1.") {
		t.Errorf("ADFToText fence not longer than the content's: %q", got)
	}
}

// Paragraph text (the headline, notes, causes) cannot inject wiki markup;
// a configured mention stays a mention.
func TestWikiParagraphsAreEscaped(t *testing.T) {
	for text, want := range map[string]string{
		"cancelled: {panel}x{panel} [click|http://evil] !img.png! a|b": `cancelled: \{panel\}x\{panel\} \[click\|http://evil\] \!img.png\! a\|b`,
		"h1. Heading":               `\h1. Heading`,
		"needs a person: [~alice]":  "needs a person: [~alice]",
		"needs: [~alice]x":          `needs: \[~alice\]x`,
		"back\\slash {code}":        `back\\slash \{code\}`,
		"```{x}\n{code}\n```":       "{noformat}\n\\{code}\n{noformat}",
		"```go\nmap[string]{}\n```": "{code:go}\nmap[string]\\{}\n{code}",
	} {
		if got := TextToWiki(text); got != want {
			t.Errorf("TextToWiki(%q) = %q, want %q", text, got, want)
		}
	}
}
