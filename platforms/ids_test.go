package platforms

import (
	"errors"
	"testing"
)

func TestNumberedID(t *testing.T) {
	f := NumberedID{Platform: "x", Sep: '#', Want: "a/b#n", CheckLocator: func(s string) error {
		if s == "bad" {
			return errors.New("bad")
		}
		return nil
	}}
	if got := f.Format("a/b", 12); got != "a/b#12" {
		t.Fatalf("Format = %q", got)
	}
	loc, n, err := f.Parse("a/b#c#12")
	if err != nil || loc != "a/b#c" || n != 12 {
		t.Errorf("Parse = %q %d %v", loc, n, err)
	}
	for _, id := range []string{"", "#1", "a/b", "a/b#", "a/b#0", "a/b#-1", "a/b#+1", "a/b#1x", "bad#1"} {
		if _, _, err := f.Parse(id); err == nil {
			t.Errorf("Parse(%q) accepted", id)
		}
	}
	if n, err := f.Resolve(Ref{Platform: "x", ID: "A/B#3"}, "a/b"); err != nil || n != 3 {
		t.Errorf("Resolve case-insensitively = %d %v", n, err)
	}
	if _, err := f.Resolve(Ref{Platform: "y", ID: "a/b#3"}, "a/b"); err == nil {
		t.Error("Resolve accepted another platform's ref")
	}
	if _, err := f.Resolve(Ref{Platform: "x", ID: "c/d#3"}, "a/b"); err == nil {
		t.Error("Resolve accepted another project's ref")
	}
}
