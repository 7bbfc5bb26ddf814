// Command chaos proves agentsmithd keeps its promise — nothing lost, nothing
// run twice at once, no write by a replica that lost its run — with real
// processes and real faults: three agentsmithd replicas, a real
// redis-server and the tracker sandbox (four dialects, in-process, served
// over loopback HTTP). It kills replicas with kill -9, freezes the
// housekeeping leader past its lease, wipes Redis, duplicates webhook
// deliveries, makes the tracker slow, failing and rate-limited, and runs
// pipelines that hang or ignore SIGTERM; then it partitions the network
// through a proxy between each replica and Redis and the tracker (a
// replica cut from Redis while it reaches the tracker, one cut from the
// tracker, Redis slow and flapping, a receiver cut from Redis); then it prints a table of figures
// and exits non-zero unless lost, overlapping runs and stale writes are 0.
//
//	go run ./cmd/chaos -tickets 300 -duration 2m -seed 1
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// commaList sets *dst to a flag's comma-separated names.
func commaList(dst *[]string) func(string) error {
	return func(v string) error {
		*dst = nil
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				*dst = append(*dst, s)
			}
		}
		return nil
	}
}

func main() {
	o := DefaultOptions()
	// -soak picks the soak's defaults before the other flags are read, so
	// they can still change any of them.
	for i, a := range os.Args[1:] {
		v, ok := strings.CutPrefix(strings.TrimLeft(a, "-"), "soak=")
		if !ok && strings.TrimLeft(a, "-") == "soak" && i+2 < len(os.Args) {
			v, ok = os.Args[i+2], true
		}
		if d, err := time.ParseDuration(v); ok && err == nil {
			o = SoakOptions(d)
		}
	}
	fs := flag.NewFlagSet("chaos", flag.ExitOnError)
	fs.Func("soak", "run the soak of this length (soak.go: steady load, faults, samples, slope test; make soak)", func(string) error { return nil })
	fs.DurationVar(&o.Sample, "sample", o.Sample, "sample RSS, goroutines, fds and Redis this often (0: off)")
	fs.StringVar(&o.Plot, "plot", o.Plot, "write the samples' PNG plot here (relative to -dir)")
	fs.DurationVar(&o.KillWindow, "kill-window", o.KillWindow, "kill replicas only this long after the start (0: the whole run)")
	fs.IntVar(&o.Tickets, "tickets", o.Tickets, "tickets to feed")
	fs.DurationVar(&o.Duration, "duration", o.Duration, "how long faults run (tickets are fed in the first 60%)")
	fs.DurationVar(&o.Settle, "settle", o.Settle, "deadline for every ticket to end after the faults stop")
	fs.DurationVar(&o.Grace, "grace", o.Grace, "after the settle deadline, watch the open tickets this long: ending within it is slow, not lost (0: as long as -settle)")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "random seed (faults, ticket mix)")
	fs.DurationVar(&o.KillEvery, "kill-every", o.KillEvery, "kill -9 a random replica this often (0: off)")
	fs.DurationVar(&o.StopEvery, "stop-every", o.StopEvery, "SIGSTOP the housekeeping leader this often (0: off)")
	fs.DurationVar(&o.StopFor, "stop-for", o.StopFor, "how long a SIGSTOP lasts")
	fs.BoolVar(&o.RedisWipe, "redis-wipe", o.RedisWipe, "kill redis-server once and restart it empty")
	fs.DurationVar(&o.RedisDown, "redis-down", o.RedisDown, "how long Redis stays unreachable")
	fs.IntVar(&o.Duplicate, "duplicate", o.Duplicate, "extra copies of each webhook delivery")
	fs.BoolVar(&o.TrackerFault, "tracker-faults", o.TrackerFault, "tracker latency, 502s and 429s")
	fs.BoolVar(&o.Hang, "hang", o.Hang, "pipelines that hang past the timeout or ignore SIGTERM")
	fs.IntVar(&o.WipeBurst, "wipe-burst", o.WipeBurst, "tickets fed just before the Redis wipe, so some are Enqueued when it goes")
	fs.BoolVar(&o.Rolling, "rolling", o.Rolling, "after the faults, restart every replica in turn with SIGTERM")
	fs.IntVar(&o.RollingBurst, "rolling-burst", o.RollingBurst, "tickets fed just before the rolling restart")
	fs.DurationVar(&o.RedisRollback, "redis-rollback", o.RedisRollback, "restore Redis once from a snapshot this old (0: off)")
	fs.BoolVar(&o.RedisAOF, "redis-aof", o.RedisAOF, "run Redis with AOF (everysec) and kill -9 it once")
	fs.DurationVar(&o.Skew, "skew", o.Skew, "replica 1's wall clock this far ahead, replica 2's as far behind (0: off)")
	fs.BoolVar(&o.Cluster, "cluster", o.Cluster, "Redis Cluster (3 masters, 3 replicas); kill the daemon's master at half the run (turns off the Redis wipe, rollback, AOF crash and leader SIGSTOP)")
	fs.BoolVar(&o.FreezeDaemon, "freeze-daemon", o.FreezeDaemon, "SIGSTOP one daemon process alone (pipelines left running) past the heartbeat TTL")
	fs.BoolVar(&o.SplitBrain, "split-brain", o.SplitBrain, "cut a replica running pipelines from Redis while it reaches the tracker")
	fs.BoolVar(&o.TrackerCut, "tracker-cut", o.TrackerCut, "cut a replica running pipelines from the tracker while it reaches Redis")
	fs.BoolVar(&o.TrackerCutAtEnd, "tracker-cut-at-end", o.TrackerCutAtEnd, "cut the tracker for every replica as runs end, past the final write's 30 s, and kill -9 one replica in the cut")
	fs.BoolVar(&o.RedisSlow, "redis-slow", o.RedisSlow, "make Redis slow (0.5-3 s per command), then flapping, for every replica")
	fs.BoolVar(&o.ReceiverCut, "receiver-cut", o.ReceiverCut, "route a delivery to a receiver cut from Redis")
	fs.Func("stages", "add a staged twin of every project with these pipeline.stages (comma-separated, e.g. plan,implement,test) and feed half the tickets to them", commaList(&o.Stages))
	fs.Func("gates", "with -stages: these stages (comma-separated, e.g. implement) wait for approval, which the chaos approver gives, refuses or races with a cancel", commaList(&o.Gates))
	fs.DurationVar(&o.ApprovalKillEvery, "approval-kill-every", o.ApprovalKillEvery, "with -gates: this often, kill -9 the replica that answered the next decision's delivery, while it carries the decision out (0: off)")
	fs.DurationVar(&o.StageKillEvery, "stage-kill-every", o.StageKillEvery, "with -stages: this often, kill -9 the replica of a stage that just ended, before the next stage is pushed (0: off)")
	fs.StringVar(&o.Dir, "dir", "", "work directory (default: a new temporary directory)")
	fs.BoolVar(&o.Verbose, "v", false, "log every fault as it happens")
	_ = fs.Parse(os.Args[1:])
	o.Log = os.Stderr

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	rep, err := Run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	rep.Print(os.Stdout)
	if !rep.OK() {
		fmt.Println("FAIL: lost, overlapping runs, stale writes, leaked secrets, ended tickets run again after a rollback and stage order problems must all be 0")
		os.Exit(1)
	}
	fmt.Println("PASS")
}
