package platforms

import (
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	want := time.Date(2024, 5, 1, 12, 30, 45, 0, time.UTC)
	for _, s := range []string{"2024-05-01T12:30:45Z", "2024-05-01T14:30:45+02:00", "2024-05-01 12:30:45 UTC", "2024-05-01 14:30:45 +0200"} {
		if got := ParseTime(s); !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %s, want %s", s, got, want)
		}
	}
	for _, s := range []string{"", "yesterday", "2024-13-01T00:00:00Z"} {
		if got := ParseTime(s); !got.IsZero() {
			t.Errorf("ParseTime(%q) = %s, want zero", s, got)
		}
	}
}
