package consumer

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentsmithd/agentsmithd/pkg/procrun"
)

// The output a failed stage hands back is its tail's last maxSummaryRunes
// characters, valid UTF-8 without control characters but newline and tab.
func TestOutputResultIsBoundedText(t *testing.T) {
	tail := strings.Repeat("é", maxSummaryRunes) + "\x1b[31mFAIL\x00 TestCheckout\n\tline\xff\n\n"
	r := outputResult(procrun.Result{Tail: []byte(tail)})
	if n := utf8.RuneCountInString(r.Summary); n != maxSummaryRunes {
		t.Errorf("summary of %d characters, want %d", n, maxSummaryRunes)
	}
	if !strings.HasSuffix(r.Summary, "FAIL TestCheckout\n\tline\uFFFD") || strings.ContainsAny(r.Summary, "\x1b\x00") || !utf8.ValidString(r.Summary) {
		t.Errorf("summary ends %q: want the tail's end, control characters stripped, valid UTF-8", r.Summary[len(r.Summary)-40:])
	}
	if r := outputResult(procrun.Result{}); !r.Empty() {
		t.Errorf("no output gave %+v", r)
	}
}

func TestSendBackHeadline(t *testing.T) {
	failed := "**agent-smith**: pipeline failed; no retry configured (attempt 1)"
	if got, want := (sendBack{to: "implement", n: 1, max: 2}).headline("agent-smith", "test", failed),
		"**agent-smith**: stage test failed; the ticket goes back to stage implement (send-back 1 of 2)"; got != want {
		t.Errorf("send-back headline %q, want %q", got, want)
	}
	if got, want := (sendBack{n: 2, max: 2, usedUp: true}).headline("agent-smith", "test", failed),
		failed+"; stage test already sent the ticket back 2 times (on_failure max 2)"; got != want {
		t.Errorf("used-up headline %q, want %q", got, want)
	}
	if got := (sendBack{}).headline("agent-smith", "test", failed); got != failed {
		t.Errorf("no send-back changed the headline to %q", got)
	}
}
