package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestChaosShort is the chaos run cut down to what fits the default test
// run: a few dozen tickets for about a minute with kill -9 of replicas,
// duplicated webhook deliveries, Redis wiped with tickets Enqueued, one
// daemon SIGSTOPped alone while its pipelines run (their run guards must
// kill them before the tickets run again elsewhere), and a rolling restart
// of every replica at the end; Redis is also restored from a 2 s old
// snapshot once and, with AOF on, killed -9 once; replica 1's wall clock
// runs 2 minutes ahead and replica 2's 2 minutes behind. two network partitions: a
// replica running pipelines cut from Redis while it reaches the tracker
// (split brain) and a receiver cut from Redis. `make chaos` is the full run.
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of real processes")
	}
	o := Options{Tickets: 30, Duration: 30 * time.Second, Settle: 60 * time.Second, Seed: 7,
		KillEvery: 4 * time.Second, Duplicate: 2, RedisWipe: true, RedisDown: time.Second, WipeBurst: 20,
		Rolling: true, RollingBurst: 12, RedisRollback: 2 * time.Second, RedisAOF: true, Skew: 2 * time.Minute, FreezeDaemon: true, SplitBrain: true, ReceiverCut: true}
	o.Dir = keptDir(t, "chaos-short-")
	var log bytes.Buffer
	runLog, err := os.Create(filepath.Join(o.Dir, "chaos.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer runLog.Close()
	o.Log = io.MultiWriter(&log, runLog)
	rep := runLogged(t, o)
	if !rep.OK() {
		t.Errorf("lost %d, overlapping %d, stale writes %d, leaked secrets %d: all must be 0\nwork dir kept: %s (chaos.log, report.txt, replica logs r*.log, shared/runs.log, redis.log, trackersim.log)\n%s",
			rep.Lost, rep.Overlapping, len(rep.StaleWrites), rep.SecretLeaks, o.Dir, log.String())
	}
	if rep.Kills == 0 {
		t.Error("no replica was killed: the run proved nothing")
	}
	if !rep.Wiped || rep.WipeMissing > 0 {
		t.Errorf("Redis wipe: happened %v, %d of %d Enqueued tickets never queued again", rep.Wiped, rep.WipeMissing, rep.WipeEnqueued)
	}
	if !rep.Rollback.happened || !rep.Rollback.aofCrash {
		t.Errorf("Redis rollback happened %v, AOF crash happened %v: want both", rep.Rollback.happened, rep.Rollback.aofCrash)
	}
	if rep.SkewSeen < time.Minute {
		t.Errorf("largest queue wait logged %s: the clock skew did not reach the replicas", rep.SkewSeen)
	}
	if f := rep.Frozen; f.Runs == 0 || f.Killed != f.Runs || f.Rerun != f.Runs-f.LastAttempt || f.OverlapWorst >= 0 {
		t.Errorf("frozen daemon: %+v: every pipeline it ran must be killed by its guard before its successor started, and re-run elsewhere", f)
	}
	if len(rep.Partitions) != 2 {
		t.Errorf("%d partitions ran, want 2 (split brain, receiver cut)", len(rep.Partitions))
	}
	for _, p := range rep.Partitions {
		if len(p.Problems) > 0 || p.Lost+p.Overlapping+p.Stale > 0 {
			t.Errorf("partition %q: lost %d, overlapping %d, stale %d, problems %q", p.Name, p.Lost, p.Overlapping, p.Stale, p.Problems)
		}
	}
	if rep.RollingRestarts != 3 {
		t.Errorf("rolling restart replaced %d replicas, want 3", rep.RollingRestarts)
	}
	if t.Failed() {
		t.Logf("work dir kept: %s", o.Dir)
	}
}

// runLogged runs o, logs its table and keeps it in o.Dir as report.txt.
func runLogged(t *testing.T, o Options) *Report {
	t.Helper()
	rep, err := Run(t.Context(), o)
	if err != nil {
		t.Fatalf("%v\nwork dir kept: %s", err, o.Dir)
	}
	var table bytes.Buffer
	rep.Print(&table)
	t.Logf("chaos figures:\n%s", table.String())
	if err := os.WriteFile(filepath.Join(o.Dir, "report.txt"), table.Bytes(), 0o600); err != nil {
		t.Error(err)
	}
	return rep
}

// keptDir is a new work directory under $AGENTSMITH_ARTIFACTS (CI sets it
// and prints what a failed test leaves there: .ci/run), else under the
// system's temp dir. It is removed when the test passes and kept, but for
// the daemon binary, when it fails, so its logs can be read. The
// replicas' sandboxed runs must pass through it (world.sandboxDirs), so
// $AGENTSMITH_ARTIFACTS (.ci/run makes it with mktemp, 0700) is made to
// let others pass.
func keptDir(t *testing.T, pattern string) string {
	t.Helper()
	base := os.Getenv("AGENTSMITH_ARTIFACTS")
	if base != "" {
		if err := os.MkdirAll(base, 0o755); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(base)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(base, fi.Mode().Perm()|0o001); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := os.MkdirTemp(base, pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			_ = os.Remove(filepath.Join(dir, "agentsmithd"))
			return
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove work dir: %v", err)
		}
	})
	return dir
}
