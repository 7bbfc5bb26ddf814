package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/redisserver"
)

// rollbackFigures are the figures of Redis restored from an older snapshot
// (RestartFrom) and of Redis with AOF killed -9 and restarted (Crash).
//
// A rollback is the hard case of losing Redis data: the epoch key is in
// the snapshot, so housekeeping sees no wipe, while Redis holds queue
// entries of tickets that finished since, in-flight records and heartbeats
// of runs that ended, old claim locks, and lacks the heartbeats of the runs
// going on now. Labels are the truth: the executor reads the ticket before
// it runs a request, and the stale detector reverts nothing until Redis has
// been up for the heartbeat TTL, so the owners of the lost heartbeats find
// out and stop first.
type rollbackFigures struct {
	happened bool
	age      time.Duration // the snapshot's age when it was restored
	up       time.Time     // Redis answering again with the old dataset
	// What the snapshot brought back, for tickets that had ended (Done or
	// Failed) by the rollback.
	staleEntries int // queue, delayed or processing entries
	staleRuns    int // in-flight records
	heartbeats   int // heartbeats of restored in-flight records (expired ones are gone on load)
	claimLocks   int // claim locks restored
	epoch        bool
	ended        map[string]bool // tickets terminal at the rollback
	endedAt      time.Time       // when ended was read
	// rerun counts runs started after the rollback of tickets that had
	// ended before it: each is something that finished running again.
	rerun []string

	aofCrash bool
	aofDown  time.Duration // kill -9 → answering again
}

// redisSpec is the world's Redis: AOF with fsync every second when the run
// kills Redis -9 (RedisAOF), so the restart keeps all but the last second.
func redisSpec(o Options) redisserver.Spec {
	if !o.RedisAOF {
		return redisserver.Spec{}
	}
	return redisserver.Spec{Args: []string{"--appendonly", "yes", "--appendfsync", "everysec"}}
}

// rollback snapshots Redis at 15 % of the run, lets the fleet work on for
// o.RedisRollback, then kills Redis and restarts it from the snapshot on
// the same port, and reads what came back.
func (w *world) rollback(fctx, ctx context.Context, o Options, f *rollbackFigures) {
	if !sleepCtx(fctx, o.Duration*15/100) {
		return
	}
	snap := filepath.Join(w.dir, "rollback.rdb")
	if err := w.redis.Snapshot(ctx, snap); err != nil {
		fmt.Fprintf(w.logw, "chaos: redis snapshot: %v\n", err)
		return
	}
	taken := time.Now()
	w.record("redis-snapshot", "", 0)
	if !sleepCtx(fctx, o.RedisRollback) {
		return
	}
	f.ended = map[string]bool{}
	for _, is := range w.sim.Issues() {
		if has(is.Labels, lifecycle.Done) || has(is.Labels, lifecycle.Failed) {
			f.ended[ticketID(is)] = true
		}
	}
	f.endedAt = time.Now()
	f.age = time.Since(taken)
	if err := w.redis.RestartFrom(ctx, snap); err != nil {
		fmt.Fprintf(w.logw, "chaos: redis rollback: %v\n", err)
		return
	}
	f.happened, f.up = true, time.Now()
	w.record("redis-rollback", "", 0)
	rdb := redis.NewClient(w.redis.ClientOptions())
	defer rdb.Close()
	entries := queuedRequests(ctx, rdb)
	runs, _ := runstate.Inspect(ctx, rdb)
	for id := range f.ended {
		for _, e := range entries {
			if strings.Contains(e, `"id":"`+id+`"`) {
				f.staleEntries++
			}
		}
		for _, r := range runs {
			if r.Record.Ref.ID == id {
				f.staleRuns++
			}
		}
	}
	for _, r := range runs {
		if r.Holder != "" {
			f.heartbeats++
		}
	}
	f.claimLocks = len(scanAll(ctx, rdb, keys.ClaimLock("*", "*")))
	n, _ := rdb.Exists(ctx, keys.Epoch()).Result()
	f.epoch = n == 1
}

// aofCrash kills Redis -9 at 70 % of the run (its own goroutine, beside
// rollback's, which sets other fields of f) and starts it again from its
// append-only file (fsync every second: up to a second of writes lost).
func (w *world) aofCrash(fctx, ctx context.Context, o Options, f *rollbackFigures) {
	if !sleepCtx(fctx, o.Duration*70/100) {
		return
	}
	at := time.Now()
	if err := w.redis.Crash(ctx); err != nil {
		fmt.Fprintf(w.logw, "chaos: redis crash: %v\n", err)
		return
	}
	w.record("redis-crash", "", 0)
	f.aofCrash, f.aofDown = true, time.Since(at)
}

// rerunFinished lists runs that started after the rollback of tickets that
// had ended before it.
func (f *rollbackFigures) rerunFinished(runLog string) {
	if !f.happened {
		return
	}
	for _, r := range readRuns(runLog) {
		if f.ended[r.id] && r.start.After(f.endedAt) {
			f.rerun = append(f.rerun, fmt.Sprintf("%s attempt %d (%s) at %s", r.id, r.attempt, r.inc, r.start.Format("15:04:05.000")))
		}
	}
}

func (f *rollbackFigures) print(row func(string, any)) {
	if f.happened {
		row(fmt.Sprintf("Redis rolled back to a snapshot %s old: epoch survived", f.age.Round(100*time.Millisecond)), f.epoch)
		row("  restored: entries / in-flight records of ended tickets", fmt.Sprintf("%d / %d", f.staleEntries, f.staleRuns))
		row("  restored: heartbeats / claim locks", fmt.Sprintf("%d / %d", f.heartbeats, f.claimLocks))
		row("  ended tickets run again after the rollback", len(f.rerun))
	}
	if f.aofCrash {
		row("Redis (AOF everysec) kill -9 → answering again", f.aofDown.Round(10*time.Millisecond))
	}
}
