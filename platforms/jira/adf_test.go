package jira

import (
	"encoding/json"
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
