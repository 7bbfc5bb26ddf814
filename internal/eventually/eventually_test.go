package eventually_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
)

// fatalRecorder is a testing.TB whose Fatalf records the message instead
// of stopping the goroutine, so a test can watch a wait fail.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }

func TestValueReturnsWhatSatisfiedTheWait(t *testing.T) {
	calls := 0
	got := eventually.Value(t, 5*time.Second, "the third read", func() (int, bool) {
		calls++
		return calls * 10, calls == 3
	})
	if got != 30 || calls != 3 {
		t.Errorf("Value = %d after %d reads, want 30 after 3", got, calls)
	}
}

func TestValueFailsAtTheDeadlineNamingWhat(t *testing.T) {
	r := &fatalRecorder{TB: t}
	start := time.Now()
	got := eventually.Value(r, 50*time.Millisecond, "a pid file", func() (int, bool) { return 7, false })
	if got != 0 {
		t.Errorf("Value after a timeout = %d, want the zero value", got)
	}
	if want := "timed out after 50ms waiting for a pid file"; r.fatal != want {
		t.Errorf("failure %q, want %q", r.fatal, want)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("gave up after %s, before the 50ms deadline", d)
	}
}
