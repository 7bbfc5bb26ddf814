package lifecycle_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// The parked index lists the longest-waiting tickets first, at most the
// limit of how many there are, with the title bounded and stripped of
// control characters and whether this parking escalated; Unpark drops a
// ticket with its GateParked.
func TestParkedIndex(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	ctx := t.Context()
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	refOf := func(n string) platforms.Ref {
		return platforms.Ref{Platform: "github", Project: "app", ID: "o/app#" + n}
	}
	long := "\x1b[31m" + strings.Repeat("é", lifecycle.MaxParkedTitle)
	for i, n := range []string{"3", "1", "2"} {
		if err := lifecycle.Park(ctx, rdb, lifecycle.ParkedEntry{Ref: refOf(n), Stage: "implement", Title: long, Since: at.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.Set(ctx, keys.GateEscalated(refOf("3").Key()), lifecycle.ParkedStamp(at), keys.GateTTL).Err(); err != nil {
		t.Fatal(err)
	}
	got, total, err := lifecycle.ListParked(ctx, rdb, 2)
	if err != nil {
		t.Fatal(err)
	}
	if total != 3 || len(got) != 2 || got[0].Ref != refOf("3") || got[1].Ref != refOf("1") {
		t.Fatalf("listed %+v of %d, want #3 and #1 of 3", got, total)
	}
	if !got[0].Escalated || got[1].Escalated {
		t.Errorf("escalated = %v, %v; want true, false", got[0].Escalated, got[1].Escalated)
	}
	if ti := got[0].Title; len(ti) > lifecycle.MaxParkedTitle || strings.ContainsRune(ti, 0x1b) || !strings.HasPrefix(ti, "[31mé") {
		t.Errorf("title %q: want at most %d bytes, no control characters", ti, lifecycle.MaxParkedTitle)
	}
	if err := lifecycle.Unpark(ctx, rdb, refOf("3")); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Exists(ctx, keys.GateParked(refOf("3").Key())).Result(); n != 0 {
		t.Error("Unpark left GateParked")
	}
	if got, total, _ := lifecycle.ListParked(ctx, rdb, 0); total != 2 || len(got) != 2 || got[0].Ref != refOf("1") {
		t.Errorf("after Unpark: %+v of %d, want #1, #2", got, total)
	}
}
