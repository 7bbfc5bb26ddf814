package runcg

import "testing"

// Sizes read as the config wrote them: binary units where they divide,
// decimal ones where those do.
func TestFormatBytes(t *testing.T) {
	for _, c := range []struct {
		n    int64
		text string
	}{
		{4 << 30, "4 GiB"},
		{64 << 20, "64 MiB"},
		{1536 << 20, "1536 MiB"},
		{1 << 40, "1 TiB"},
		{8 << 10, "8 KiB"},
		{4e9, "4 GB"},
		{512e6, "512 MB"},
		{3e3, "3 KB"},
		{100, "100 B"},
	} {
		if got := FormatBytes(c.n); got != c.text {
			t.Errorf("FormatBytes(%d) = %q, want %q", c.n, got, c.text)
		}
	}
}

func TestLimitsValidate(t *testing.T) {
	for _, l := range []Limits{{}, {MemoryBytes: 1 << 30, Pids: 512, CPU: 2}, {CPU: 0.01}} {
		if err := l.Validate(); err != nil {
			t.Errorf("%+v: %v", l, err)
		}
	}
	for _, l := range []Limits{{MemoryBytes: -1}, {Pids: -1}, {CPU: -1}, {CPU: 0.001}} {
		if err := l.Validate(); err == nil {
			t.Errorf("%+v: valid", l)
		}
	}
}
