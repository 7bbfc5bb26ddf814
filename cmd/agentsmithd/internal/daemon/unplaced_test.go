package daemon

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// Parked entries are logged once per pool per report, however many there
// were, and a pool with nothing new is not logged again.
func TestUnplacedLoggedOncePerPool(t *testing.T) {
	counts := map[string]uint64{}
	obs, logs := observer.New(zap.WarnLevel)
	u := &unplacedLog{counts: func() map[string]uint64 { return counts }, log: zap.New(obs)}
	pools := func() []string {
		var out []string
		for _, e := range logs.TakeAll() {
			out = append(out, e.ContextMap()["pool"].(string))
		}
		return out
	}
	u.report()
	if got := pools(); len(got) != 0 {
		t.Errorf("nothing parked, logged %q", got)
	}
	counts["gpu"], counts["bad pool"] = 40, 1
	u.report()
	if got := pools(); len(got) != 2 || got[0] != "invalid" || got[1] != "gpu" {
		t.Errorf("logged pools %q, want invalid and gpu once each", got)
	}
	counts["gpu"] = 41
	u.report()
	if got := pools(); len(got) != 1 || got[0] != "gpu" {
		t.Errorf("logged pools %q, want gpu alone (bad pool parked nothing new)", got)
	}
	u.report()
	if got := pools(); len(got) != 0 {
		t.Errorf("nothing new parked, logged %q", got)
	}
}
