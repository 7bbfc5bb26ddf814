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
