// Package eventually is how tests wait: poll a condition until it holds or a
// deadline passes, never a bare sleep standing in for synchronisation.
//
// A hand-rolled polling loop in a _test.go file (a time.Sleep in a loop, or a
// loop on time.Now) fails TestNoHandRolledPolling; use Wait or Value instead,
// or add the loop to that test's allow-list with the reason it is not a wait.
package eventually

import (
	"testing"
	"time"
)

// Poll is how often the condition is checked.
const Poll = 10 * time.Millisecond

// Wait polls cond until it returns true, failing t after timeout with what.
// cond runs on the caller's goroutine, so it may call t.Fatal itself when
// what it reads is broken rather than not yet true.
func Wait(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	Value(t, timeout, what, func() (struct{}, bool) { return struct{}{}, cond() })
}

// Value polls get until it reports ok and returns the value it read then,
// failing t after timeout with what. It is Wait for a condition whose
// evidence the test goes on to use (a pid read from a file, a parsed
// reply), so the test acts on exactly what satisfied the wait instead of
// reading it a second time.
func Value[T any](t testing.TB, timeout time.Duration, what string, get func() (T, bool)) T {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if v, ok := get(); ok {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
			var zero T
			return zero // t is a fake that did not stop the goroutine
		}
		time.Sleep(Poll)
	}
}
