package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// A run frozen with its replica and killed on waking ("term" only) does not
// overlap its successor; a run that ticks again after waking does.
func TestOverlapCountsWorkNotSuspension(t *testing.T) {
	log := `start T-1 1 r1.1 k101 10.0
tick T-1 1 r1.1 k101 10.1
start T-1 2 r2.1 k201 12.0
tick T-1 2 r2.1 k201 12.1
term T-1 1 r1.1 k101 14.0
start T-2 1 r1.1 k102 20.0
tick T-2 1 r1.1 k102 20.1
start T-2 2 r2.1 k202 22.0
tick T-2 1 r1.1 k102 24.0
`
	path := filepath.Join(t.TempDir(), "runs.log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	runs := readRuns(path)
	if len(runs) != 4 {
		t.Fatalf("read %d runs, want 4", len(runs))
	}
	if workedDuring(runs[1], runs[0], nil, true) || workedDuring(runs[0], runs[1], nil, true) {
		t.Error("T-1: a suspended run killed on waking counted as overlapping")
	}
	if !workedDuring(runs[3], runs[2], nil, true) {
		t.Error("T-2: a run that worked again while its successor ran was not counted")
	}
}

// The 2-hour soak's acmeorg/webapp#873: attempt 1 frozen with its replica
// for 4 s, attempt 2 claimed elsewhere, run and ended within the freeze,
// attempt 1 ticking once 46 ms after the thaw and then killed. A run the
// harness holds stopped is not working, so that is not overlap; the tick
// after the thaw is the paused figures'. Ticking within thawBound of the
// thaw while the successor still runs is the paused host's window (the
// 2-hour soak's acmeorg/webapp#75, +2 ms), shown but not overlap; ticking
// later than that while the successor runs is overlap.
func TestFrozenWithReplicaOverlapsOnlyAfterTheThaw(t *testing.T) {
	attempt1 := `start W-1 1 r1.1 k101 1000.000
tick W-1 1 r1.1 k101 1000.100
tick W-1 1 r1.1 k101 1000.200
tick W-1 1 r1.1 k101 1000.300
`
	freeze := freezeSpan{inc: "r1.1", pid: 100, groups: []int{101}, keys: map[string]bool{"k101": true},
		from: time.Unix(1000, 350e6), until: time.Unix(1004, 350e6)}
	for _, c := range []struct {
		name, successor, thawed string
		while, beyond           int
		worst                   time.Duration
	}{
		{"successor ended in the freeze", `start W-1 2 r2.1 k201 1003.600
tick W-1 2 r2.1 k201 1003.700
tick W-1 2 r2.1 k201 1003.800
end W-1 2 r2.1 k201 1004.100
`, `tick W-1 1 r1.1 k101 1004.396
term W-1 1 r1.1 k101 1004.420
`, 0, 0, 46 * time.Millisecond},
		{"successor running at the thaw", `start W-1 2 r2.1 k201 1003.600
tick W-1 2 r2.1 k201 1003.700
tick W-1 2 r2.1 k201 1004.300
tick W-1 2 r2.1 k201 1004.500
end W-1 2 r2.1 k201 1004.600
`, `tick W-1 1 r1.1 k101 1004.396
term W-1 1 r1.1 k101 1004.420
`, 1, 0, 46 * time.Millisecond},
		{"working past the thaw bound while the successor runs", `start W-1 2 r2.1 k201 1003.600
tick W-1 2 r2.1 k201 1003.700
tick W-1 2 r2.1 k201 1004.300
tick W-1 2 r2.1 k201 1006.500
end W-1 2 r2.1 k201 1006.600
`, `tick W-1 1 r1.1 k101 1004.396
tick W-1 1 r1.1 k101 1005.950
term W-1 1 r1.1 k101 1005.960
`, 1, 1, 1600 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := attempt1 + c.successor + c.thawed
			path := filepath.Join(t.TempDir(), "runs.log")
			if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
				t.Fatal(err)
			}
			runs := readRuns(path)
			sort.Slice(runs, func(i, j int) bool { return runs[i].start.Before(runs[j].start) })
			if len(runs) != 2 {
				t.Fatalf("read %d runs, want 2", len(runs))
			}
			fz := []freezeSpan{freeze}
			if got := len(overlaps(runs, fz)); got != c.beyond {
				t.Errorf("overlapping pairs = %d, want %d", got, c.beyond)
			}
			p := measurePaused(fz, map[string][]*run{"W-1": runs})
			want := pausedFigures{Freezes: 1, Frozen: 1, Rerun: 1, AfterThaw: 1, WhileSuccessor: c.while, BeyondBound: c.beyond, ThawWorst: c.worst}
			p.ThawWorst = p.ThawWorst.Round(time.Millisecond)
			if p != want {
				t.Errorf("paused figures = %+v, want %+v", p, want)
			}
		})
	}
}

// The pipeline logs its incarnation ($AGENTSMITH_INSTANCE) and its run key
// as runKey reads it from the run token, which readRuns keys runs by: in
// a sandbox, pids are the run's own and the daemon is not visible.
func TestPipelineLogsInstanceAndRunKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.log")
	token := lifecycle.OwnerToken("r2.3", "queue", time.Now())
	cmd := exec.Command("bash", "-c", pipelineScript)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "RUN_LOG=" + path, "AGENTSMITH_TICKET_ID=o/r#1", "AGENTSMITH_ATTEMPT=2",
		"AGENTSMITH_TITLE=fail", "AGENTSMITH_INSTANCE=r2.3", "AGENTSMITH_RUN_TOKEN=" + token}
	if err := cmd.Run(); err == nil {
		t.Fatal("a fail-titled pipeline exited 0")
	}
	runs := readRuns(path)
	if len(runs) != 1 {
		t.Fatalf("read %d runs, want 1", len(runs))
	}
	r := runs[0]
	if r.inc != "r2.3" || r.key != runKey(token) || len(r.key) != 12 || strings.Contains(token[:len(token)-32], r.key) || !r.failed || r.attempt != 2 {
		t.Errorf("run = %+v, want incarnation r2.3, key %q (of %q), failed, attempt 2", r, runKey(token), token)
	}
}
