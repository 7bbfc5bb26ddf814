package trust

import (
	"testing"
	"time"
)

// Each holder's window ends before its key can expire, counted from the
// start of the call, with the margins the package doc gives.
func TestWindows(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		name   string
		w      Window
		margin time.Duration
	}{
		{"lease", Fraction(15*time.Second, DefaultLeaseTrust), 6 * time.Second},
		{"presence", Fraction(15*time.Second, DefaultPresenceTrust), 6 * time.Second},
		{"heartbeat", Fraction(2*time.Minute, DefaultHeartbeatTrust), 12 * time.Second},
	} {
		if got := start.Add(c.w.TTL).Sub(c.w.Until(start)); got != c.margin {
			t.Errorf("%s: margin %s, want %s", c.name, got, c.margin)
		}
	}
}

func TestFractionOutsideRangePanics(t *testing.T) {
	for _, f := range []float64{0, 1, -0.5, 1.5} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Fraction(%v) did not panic", f)
				}
			}()
			Fraction(time.Second, f)
		}()
	}
}
