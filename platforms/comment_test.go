package platforms

import (
	"errors"
	"testing"
)

func TestRejectedOnlyForPermanent4xx(t *testing.T) {
	base := errors.New("answer")
	for status, want := range map[int]bool{400: true, 401: true, 403: true, 404: true, 422: true,
		408: false, 409: false, 412: false, 429: false, 500: false, 503: false, 0: false} {
		if got := errors.Is(Rejected(status, base), ErrRejected); got != want {
			t.Errorf("status %d: rejected %v, want %v", status, got, want)
		}
		if !errors.Is(Rejected(status, base), base) {
			t.Errorf("status %d: the original error is lost", status)
		}
	}
	if Rejected(400, nil) != nil {
		t.Error("nil error became non-nil")
	}
}

func TestNoCommandLines(t *testing.T) {
	for in, want := range map[string]string{
		"/close":                  "\u200b/close",
		"ok\n  /title x\n\t/move": "ok\n  \u200b/title x\n\t\u200b/move",
		"a /close\nhttps://x/y":   "a /close\nhttps://x/y",
		"":                        "",
		"\r/close":                "\r\u200b/close",
		// Issue 41: every leading blank a reader may skip, and every line
		// break a reader may split on.
		"\u00a0/close":        "\u00a0\u200b/close",
		"\u2003/close":        "\u2003\u200b/close",
		"\u3000/close":        "\u3000\u200b/close",
		"\u0085/close":        "\u0085\u200b/close",
		"\u2028/close":        "\u2028\u200b/close",
		"\u2029/close":        "\u2029\u200b/close",
		"\ufeff/close":        "\ufeff\u200b/close",
		"\u2060\u00a0 /close": "\u2060\u00a0 \u200b/close",
		"ok\r\n/close\r\n":    "ok\r\n\u200b/close\r\n",
		"ok\u2028/close":      "ok\u2028\u200b/close",
		"ok\u0085 /close":     "ok\u0085 \u200b/close",
		"ok\u00a0/close":      "ok\u00a0/close", // inside a line
		"\u200b/close":        "\u200b/close",   // already neutral
		"//x":                 "\u200b//x",
	} {
		if got := NoCommandLines(in); got != want {
			t.Errorf("NoCommandLines(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNoMentions(t *testing.T) {
	if got := NoMentions("@dependabot merge, mail a@b.c, @\u200bx"); got != "@\u200bdependabot merge, mail a@\u200bb.c, @\u200bx" {
		t.Errorf("NoMentions = %q", got)
	}
}

// NoCommandLines applied to its own output changes nothing (a GitLab note
// passes through it twice).
func TestNoCommandLinesIdempotent(t *testing.T) {
	for _, in := range []string{"/a\n \u00a0/b\u2028/c", "\ufeff/x\r\n\t/y", "a/b"} {
		once := NoCommandLines(in)
		if twice := NoCommandLines(once); twice != once {
			t.Errorf("NoCommandLines(%q): %q, then %q", in, once, twice)
		}
	}
}

// CommentLine skips only ASCII blanks before the first line's text, so a
// line that opens with any other blank is never a command's.
func TestCommentLineStrictBlanks(t *testing.T) {
	for in, want := range map[string]string{
		"/agent-smith approve":               "/agent-smith approve",
		" \t/agent-smith approve \u00a0":     "/agent-smith approve",
		"\r\n\r\n /agent-smith approve\r\nx": "/agent-smith approve",
		"\u00a0/agent-smith approve":         "\u00a0/agent-smith approve",
		"\u2003/agent-smith approve":         "\u2003/agent-smith approve",
		"\u3000/agent-smith approve":         "\u3000/agent-smith approve",
		"\u0085/agent-smith approve":         "\u0085/agent-smith approve",
		"\u2028/agent-smith approve":         "\u2028/agent-smith approve",
		"\u2029/agent-smith approve":         "\u2029/agent-smith approve",
		"\ufeff/agent-smith approve":         "\ufeff/agent-smith approve",
		" \u00a0/agent-smith approve":        "\u00a0/agent-smith approve",
	} {
		if got := CommentLine(in); got != want {
			t.Errorf("CommentLine(%q) = %q, want %q", in, got, want)
		}
	}
}
