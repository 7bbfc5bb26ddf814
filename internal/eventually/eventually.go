// Package eventually is how tests wait: poll a condition until it holds or a
// deadline passes, never a bare sleep standing in for synchronisation.
package eventually

import (
	"testing"
	"time"
)

// Poll is how often the condition is checked.
const Poll = 10 * time.Millisecond

// Wait polls cond until it returns true, failing t after timeout with what.
func Wait(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(Poll)
	}
}
