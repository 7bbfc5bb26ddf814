package lifecycle

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentsmithd/agentsmithd/pkg/procrun"
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
