package main

import (
	"os"
	"path/filepath"
	"testing"
)

// A run frozen with its replica and killed on waking ("term" only) does not
// overlap its successor; a run that ticks again after waking does.
func TestOverlapCountsWorkNotSuspension(t *testing.T) {
	log := `start T-1 1 100 101 10.0
tick T-1 1 100 101 10.1
start T-1 2 200 201 12.0
tick T-1 2 200 201 12.1
term T-1 1 100 101 14.0
start T-2 1 100 102 20.0
tick T-2 1 100 102 20.1
start T-2 2 200 202 22.0
tick T-2 1 100 102 24.0
`
	path := filepath.Join(t.TempDir(), "runs.log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	runs := readRuns(path)
	if len(runs) != 4 {
		t.Fatalf("read %d runs, want 4", len(runs))
	}
	if workedDuring(runs[1], runs[0]) || workedDuring(runs[0], runs[1]) {
		t.Error("T-1: a suspended run killed on waking counted as overlapping")
	}
	if !workedDuring(runs[3], runs[2]) {
		t.Error("T-2: a run that worked again while its successor ran was not counted")
	}
}
