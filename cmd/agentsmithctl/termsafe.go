package main

import (
	"io"
	"strings"
)

// termSafe wraps w so that nothing agentsmithctl prints can drive the
// operator's terminal: ticket titles, causes and audit reasons come from
// tracker users, and an escape sequence in one (OSC 52 writes the
// clipboard, others retitle the window or redraw the screen) would act when
// printed raw. C0 controls other than newline and tab, DEL and C1 controls
// are dropped, which breaks every escape sequence into inert text, and
// invalid UTF-8 (a lone 0x9B byte is CSI on 8-bit terminals) becomes U+FFFD.
// JSON output (-o json) escapes control characters itself and passes
// through unchanged.
func termSafe(w io.Writer) io.Writer { return safeWriter{w} }

type safeWriter struct{ w io.Writer }

func (s safeWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, stripTerminalControls(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// stripTerminalControls removes what a terminal would act on from s.
func stripTerminalControls(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}
