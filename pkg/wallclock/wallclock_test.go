package wallclock

import (
	"testing"
	"time"
)

func TestParseBoundsTheSkew(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"": 0, "2m": 2 * time.Minute, "-90s": -90 * time.Second, "junk": 0, "100000h": 0, "-25h": 0,
	} {
		if got := Parse(in); got != want {
			t.Errorf("Parse(%q) = %s, want %s", in, got, want)
		}
	}
}

// The skew moves wall time only: the monotonic reading moves with it, so
// a duration measured between two readings is the real one.
func TestSkewKeepsDurations(t *testing.T) {
	a := time.Now().Add(5 * time.Minute)
	b := time.Now().Add(5 * time.Minute)
	if d := b.Sub(a); d < 0 || d > time.Second {
		t.Errorf("duration between two skewed readings = %s", d)
	}
	if d := a.Round(0).Sub(time.Now().Round(0)); d < 4*time.Minute {
		t.Errorf("wall time shifted by %s, want ~5m", d)
	}
}
