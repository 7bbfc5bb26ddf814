package runcg

import "testing"

func TestParseAndFormatBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int64
		text string
	}{
		{"4GiB", 4 << 30, "4 GiB"},
		{"4 GiB", 4 << 30, "4 GiB"},
		{"64MiB", 64 << 20, "64 MiB"},
		{"1536M", 1536 << 20, "1536 MiB"},
		{"2g", 2 << 30, "2 GiB"},
		{"1TiB", 1 << 40, "1 TiB"},
		{"8KiB", 8 << 10, "8 KiB"},
		{"100", 100, "100 B"},
		{"1048576", 1 << 20, "1 MiB"},
	} {
		n, err := ParseBytes(c.in)
		if err != nil || n != c.n {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", c.in, n, err, c.n)
		}
		if got := FormatBytes(c.n); got != c.text {
			t.Errorf("FormatBytes(%d) = %q, want %q", c.n, got, c.text)
		}
	}
	for _, bad := range []string{"", "GiB", "4GB", "4 MB", "-1", "1.5GiB", "99999999999TiB"} {
		if n, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", bad, n)
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
