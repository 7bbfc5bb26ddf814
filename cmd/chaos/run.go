package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// Options are the knobs of one chaos run; every fault can be switched off.
type Options struct {
	Tickets  int
	Duration time.Duration // faults and feeding; tickets are fed in the first 60 %
	Settle   time.Duration // deadline for every ticket to end after the faults stop
	// Grace is how long past the settle deadline the tickets still open
	// are watched: one that ends within it is slow, one that does not is
	// lost (settle.go). 0: as long as Settle.
	Grace time.Duration
	Seed  uint64

	KillEvery    time.Duration // kill -9 a random replica (0: off)
	StopEvery    time.Duration // SIGSTOP the housekeeping leader past the lease TTL (0: off)
	StopFor      time.Duration
	RedisWipe    bool          // kill redis-server once, keep it down, restart it empty
	RedisDown    time.Duration // how long Redis is unreachable
	Duplicate    int           // extra copies of every webhook delivery
	TrackerFault bool          // cycle latency, 502s and 429s
	Hang         bool          // some pipelines hang past the timeout, some ignore SIGTERM
	// WipeBurst tickets are fed just before Redis is wiped, so some are
	// Enqueued (their queue entries die with Redis) when it goes.
	WipeBurst int
	// Rolling restarts every replica in turn with SIGTERM after the faults,
	// while RollingBurst fresh tickets run: no ticket may be lost.
	Rolling      bool
	RollingBurst int
	// RedisRollback restores Redis from a snapshot this old, once (0: off);
	// RedisAOF runs Redis with AOF (everysec) and kills it -9 once.
	RedisRollback time.Duration
	RedisAOF      bool
	// Skew runs replica 1's wall clock this far ahead, replica 2's as far
	// behind (0: off).
	Skew time.Duration
	// Cluster runs Redis as a cluster of 3 masters with a replica each and
	// kills the master holding the daemon's slot at half the run. The Redis
	// wipe, rollback, AOF crash and leader SIGSTOP (which read the one
	// server) are off then.
	Cluster bool
	// FreezeDaemon SIGSTOPs one replica's daemon process alone, its
	// pipelines left running, past the heartbeat TTL (frozen.go).
	FreezeDaemon bool
	// Network partitions, each on its own after the faults above, through
	// the replicas' proxies (partition.go): a replica cut from Redis that
	// still reaches the tracker (split brain), a replica cut from the
	// tracker, Redis slow then flapping for every replica, and a receiver
	// cut from Redis.
	SplitBrain, TrackerCut, RedisSlow, ReceiverCut bool
	// TrackerCutAtEnd cuts the tracker for every replica as runs end, past
	// the final write's timeout, and kills one replica in the cut
	// (outcomecut.go): every outcome written after the restore, none run
	// twice.
	TrackerCutAtEnd bool

	// The soak's knobs (soak.go): KillWindow ends the kills this long
	// after the start (0: the whole run), FeedAll spreads the tickets over
	// the whole run instead of its first 60 %, Sample > 0 samples the
	// processes and Redis that often, and Plot names the PNG of the
	// samples (relative to Dir).
	KillWindow time.Duration
	FeedAll    bool
	Sample     time.Duration
	Plot       string

	// Stages, when set, adds a staged twin of every project with these
	// pipeline.stages and feeds half the steady tickets to them;
	// StageKillEvery kills, that often, the replica of a stage that just
	// ended, before the next stage is pushed (stages.go; 0: off).
	Stages         []string
	StageKillEvery time.Duration
	// Gates are the stages (of Stages) with an approval gate: the
	// approver decides their parked tickets; ApprovalKillEvery kills, that
	// often, the replica handling a decision (approver.go; 0: off).
	Gates             []string
	ApprovalKillEvery time.Duration

	Dir     string // work directory ("" = a new temporary one)
	Verbose bool
	Log     io.Writer
}

// DefaultOptions is the full run `make chaos` does.
func DefaultOptions() Options {
	return Options{Tickets: 300, Duration: 120 * time.Second, Settle: 120 * time.Second, Seed: 1,
		KillEvery: 5 * time.Second, StageKillEvery: 7 * time.Second, ApprovalKillEvery: 8 * time.Second, StopEvery: 20 * time.Second, StopFor: 4 * time.Second,
		RedisWipe: true, RedisDown: 3 * time.Second, WipeBurst: 40, Duplicate: 2, TrackerFault: true, Hang: true,
		Rolling: true, RollingBurst: 40, RedisRollback: 2 * time.Second, RedisAOF: true, Skew: 2 * time.Minute, FreezeDaemon: true,
		SplitBrain: true, TrackerCut: true, RedisSlow: true, ReceiverCut: true, TrackerCutAtEnd: true}
}

type ticket struct {
	p      project
	n      int
	id     string
	fed    time.Time
	source string
}

// Run performs one chaos run and returns its figures.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "agentsmith-chaos-")
		if err != nil {
			return nil, fmt.Errorf("chaos: %w", err)
		}
		dir = d
	}
	fmt.Fprintf(o.Log, "chaos: work dir %s (replica logs, configs, run log)\n", dir)
	if o.Cluster {
		o.RedisWipe, o.RedisRollback, o.RedisAOF, o.StopEvery, o.WipeBurst = false, 0, false, 0, 0
		// The partitions cut the standalone server's proxies.
		o.SplitBrain, o.TrackerCut, o.RedisSlow, o.ReceiverCut, o.TrackerCutAtEnd = false, false, false, false, false
		// The daemon's cluster-mode key names, for finding its slot.
		if err := keys.UseHashTag(true); err != nil {
			return nil, fmt.Errorf("chaos: %w", err)
		}
	}
	if len(o.Stages) == 0 {
		o.Gates = nil
	}
	useStages(o.Stages, o.Gates)
	w, err := newWorld(ctx, dir, o.Log, o.Verbose, redisSpec(o), o.Skew, o.Cluster)
	if w != nil {
		defer w.close()
	}
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x5eed))
	baseFaults := trackersim.Faults{Duplicate: o.Duplicate, Seed: int64(o.Seed)}
	w.sim.SetFaults(baseFaults)

	start := time.Now()
	fctx, stopFaults := context.WithTimeout(ctx, o.Duration)
	defer stopFaults()
	var wg sync.WaitGroup
	var rmu sync.Mutex // guards rng
	rnd := func(n int) int { rmu.Lock(); defer rmu.Unlock(); return rng.IntN(n) }
	// The approver decides parkings until the analysis: through the
	// faults and the settle.
	actx, stopApprover := context.WithCancel(ctx)
	defer stopApprover()
	var approverDone sync.WaitGroup
	if len(o.Gates) > 0 {
		w.approver = newApprover(w, rnd)
		approverDone.Add(1)
		go func() { defer approverDone.Done(); w.approver.run(actx, 100*time.Millisecond) }()
	}

	// Feed tickets over the first 60 % of the run.
	var tickets []*ticket
	var tmu sync.Mutex
	// feed creates one triggered ticket; tag ("" or "slow") picks its
	// pipeline's behaviour, and only untagged tickets may hang or fail.
	feed := func(p project, tag string) *ticket {
		tmu.Lock()
		i := len(tickets)
		tmu.Unlock()
		title := fmt.Sprintf("chaos ticket %d %s", i, tag)
		if o.Hang && tag == "" {
			switch k := rnd(100); {
			case k < 4:
				title += " hang"
			case k < 7:
				title += " stubborn"
			}
		}
		if tag == "" && rnd(100) < 8 {
			title += failTitle(p, rnd(100))
		}
		n := w.sim.CreateIssue(p.Repo, title, "", config.DefaultTriggerLabel)
		src := "webhook"
		if !p.webhook {
			src = "poll"
		} else if p.polling {
			src = "webhook+poll"
		}
		t := &ticket{p: p, n: n, id: p.ID(n), fed: time.Now(), source: src}
		tmu.Lock()
		tickets = append(tickets, t)
		tmu.Unlock()
		return t
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		share := 0.6
		if o.FeedAll {
			share = 1
		}
		gap := time.Duration(float64(o.Duration) * share / float64(max(o.Tickets, 1)))
		for i := 0; i < o.Tickets && fctx.Err() == nil; i++ {
			feed(projects[i%len(projects)], "")
			sleepCtx(fctx, gap)
		}
	}()

	// The kills end with the faults, or KillWindow after the start.
	kctx := fctx
	if o.KillWindow > 0 {
		var cancel context.CancelFunc
		kctx, cancel = context.WithTimeout(fctx, o.KillWindow)
		defer cancel()
	}
	if o.KillEvery > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sleepCtx(kctx, o.KillEvery) {
				r := w.replicas[rnd(len(w.replicas))]
				w.mu.Lock()
				busy := r.stopped
				w.mu.Unlock()
				if busy || !w.killPod(r) {
					continue
				}
				sleepCtx(fctx, time.Second)
				if err := w.startReplica(r); err != nil {
					fmt.Fprintf(o.Log, "chaos: restart %d: %v\n", r.slot, err)
				}
			}
		}()
	}
	if o.StageKillEvery > 0 && len(o.Stages) > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); stageWindowKills(kctx, w, o.StageKillEvery, rnd) }()
	}
	if o.ApprovalKillEvery > 0 && w.approver != nil {
		wg.Add(1)
		go func() { defer wg.Done(); approvalKills(kctx, w, o.ApprovalKillEvery, rnd) }()
	}
	if o.StopEvery > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdb := redis.NewClient(&redis.Options{Addr: w.redis.Addr()})
			defer rdb.Close()
			for sleepCtx(fctx, o.StopEvery) {
				v, err := rdb.Get(fctx, keys.Leader(keys.LeaderHousekeeping)).Result()
				if err != nil {
					continue
				}
				inc, _, _ := strings.Cut(v, "/")
				var r *replica
				w.mu.Lock()
				for _, c := range w.replicas {
					if c.inc == inc && c.alive {
						r = c
					}
				}
				w.mu.Unlock()
				if r == nil {
					continue
				}
				f := w.freeze(r)
				time.Sleep(o.StopFor) // the fault itself, not synchronisation
				w.thaw(r, f)
			}
		}()
	}
	var wipe wipeFigures
	if o.RedisWipe {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !sleepCtx(fctx, o.Duration*45/100) {
				return
			}
			// A burst the consumers cannot take at once leaves tickets
			// Enqueued, so the wipe destroys real queue entries.
			for i := range o.WipeBurst {
				feed(webhookProjects()[i%len(webhookProjects())], "quick")
			}
			if o.WipeBurst > 0 {
				want := max(o.WipeBurst/4, 1)
				deadline := time.Now().Add(10 * time.Second)
				for len(enqueuedNow(w)) < want && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond) // polling the tracker with a deadline
				}
			}
			// The Enqueued tickets whose queue entries die with Redis.
			enq := enqueuedNow(w)
			if err := w.redis.Kill(); err != nil {
				fmt.Fprintf(o.Log, "chaos: redis kill: %v\n", err)
			}
			w.record("redis-down", "", 0)
			time.Sleep(o.RedisDown) // Redis unreachable: the fault itself
			if err := w.redis.Restart(ctx); err != nil {
				fmt.Fprintf(o.Log, "chaos: redis restart: %v\n", err)
				return
			}
			w.record("redis-up", "", 0)
			wipe = measureWipe(ctx, w, enq, time.Now())
		}()
	}
	var fo failoverFigures
	if o.Cluster {
		wg.Add(1)
		go func() { defer wg.Done(); fo = w.failover(fctx, ctx, o) }()
	}
	var rb rollbackFigures
	if o.RedisRollback > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); w.rollback(fctx, ctx, o, &rb) }()
	}
	if o.RedisAOF {
		wg.Add(1)
		go func() { defer wg.Done(); w.aofCrash(fctx, ctx, o, &rb) }()
	}
	if o.TrackerFault {
		wg.Add(1)
		go func() {
			defer wg.Done()
			phases := []trackersim.Faults{
				{Latency: 300 * time.Millisecond},
				{ErrorRate: 0.2},
				{RateLimitNext: 30, RetryAfter: 1},
				{},
			}
			for i := 0; sleepCtx(fctx, 6*time.Second); i++ {
				f := phases[i%len(phases)]
				f.Duplicate, f.Seed = o.Duplicate, int64(o.Seed)+int64(i)
				w.sim.SetFaults(f)
				w.logf("tracker faults %+v", f)
			}
		}()
	}
	var samples []soakSample
	if o.Sample > 0 && w.redis != nil {
		wg.Add(1)
		go func() { defer wg.Done(); samples = sampleLoop(fctx, w, w.redis.Addr(), o.Sample, start) }()
	}
	wg.Wait()
	// Faults off: every replica running, Redis up, the tracker healthy.
	w.sim.SetFaults(trackersim.Faults{Seed: int64(o.Seed)})
	w.mu.Lock()
	rs := append([]*replica(nil), w.replicas...)
	w.mu.Unlock()
	for _, r := range rs {
		if !r.alive {
			if err := w.startReplica(r); err != nil {
				return nil, err
			}
		}
	}
	var frozen frozenFigures
	if o.FreezeDaemon {
		tmu.Lock()
		from := len(tickets)
		tmu.Unlock()
		for i := range frozenBurst {
			feed(webhookProjects()[i%len(webhookProjects())], "frozen")
		}
		tmu.Lock()
		var ids []string
		for _, t := range tickets[from:] {
			ids = append(ids, t.id)
		}
		tmu.Unlock()
		frozen = w.freezeDaemonOnly(ctx, ids)
		fmt.Fprintf(o.Log, "chaos: frozen daemon: %+v\n", frozen)
	}
	var parts []*partition
	for _, sc := range []struct {
		on  bool
		run func() *partition
	}{
		{o.SplitBrain, func() *partition { return splitBrain(ctx, w, feed) }},
		{o.ReceiverCut, func() *partition { return receiverCut(ctx, w, feed) }},
		{o.TrackerCut, func() *partition { return trackerCut(ctx, w, feed) }},
		{o.TrackerCutAtEnd, func() *partition { return trackerCutAtRunEnd(ctx, w, feed) }},
		{o.RedisSlow, func() *partition { return redisSlow(ctx, w, feed, o.Seed) }},
	} {
		if sc.on && ctx.Err() == nil {
			p := sc.run()
			fmt.Fprintf(o.Log, "chaos: partition %q done\n", p.Name)
			parts = append(parts, p)
		}
	}
	var rolling rollingFigures
	if o.Rolling {
		// Slow runs outlast the shutdown grace, so SIGTERM hands them back.
		for i := range o.RollingBurst {
			feed(webhookProjects()[i%len(webhookProjects())], "slow")
		}
		var err error
		if rolling, err = w.rollingRestart(ctx); err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Log, "chaos: rolling restart of %d replicas done\n", rolling.restarts)
	}
	fmt.Fprintf(o.Log, "chaos: faults stopped after %s; settling (deadline %s)\n", time.Since(start).Round(time.Second), o.Settle)
	grace := o.Grace
	if grace <= 0 {
		grace = o.Settle
	}
	sf := settleFigures{Deadline: time.Now().Add(o.Settle), Grace: grace}
	endedAt, states := watchSettle(ctx, w, tickets, sf.Deadline, grace, 250*time.Millisecond)
	sf.Slow, sf.Lost = classifySettle(tickets, endedAt, states, sf.Deadline, time.Now())
	if len(sf.Lost) > 0 {
		rdb := w.redisClient()
		for i := range sf.Lost {
			sf.Lost[i].Diag = lostDiagnosis(ctx, w, rdb, sf.Lost[i].t)
		}
		if rdb != nil {
			rdb.Close()
		}
	}
	if len(sf.Slow)+len(sf.Lost) > 0 {
		fmt.Fprintf(o.Log, "chaos: %d tickets open at the settle deadline: %d ended within the %s grace, %d never did\n",
			len(sf.Slow)+len(sf.Lost), len(sf.Slow), grace, len(sf.Lost))
	}
	stopApprover()
	approverDone.Wait()
	// Let the last runs' log lines land before reading the run log.
	_ = w.sim.WaitIdle(ctx)
	rep := analyse(w, tickets, wipe, rolling, parts)
	// The watcher's last look decides what is lost, so the count and the
	// diagnosed tickets agree.
	rep.Settle, rep.Lost = sf, len(sf.Lost)
	rb.rerunFinished(w.runLog)
	rep.Rollback = rb
	rep.Skew, rep.SkewSeen = o.Skew, skewSeen(dir)
	rep.Failover = fo
	rep.Frozen = frozen
	if o.Sample > 0 {
		rep.Soak = newSoakFigures(samples, o.Duration, dir, o.Plot)
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// webhookProjects are the projects without stages a webhook reaches at
// once (a burst fed to a polling-only project would arrive a poll interval
// later; the scenarios' bursts time single runs).
func webhookProjects() []project {
	var out []project
	for _, p := range plainProjects() {
		if p.webhook {
			out = append(out, p)
		}
	}
	return out
}

// sleepCtx waits d or until ctx ends; false means ctx ended.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

type wipeFigures struct {
	happened bool
	enqueued int
	worst    time.Duration
	missing  int
}

// enqueuedNow is the set of tickets the tracker shows Enqueued.
func enqueuedNow(w *world) map[string]bool {
	out := map[string]bool{}
	for _, is := range w.sim.Issues() {
		if has(is.Labels, lifecycle.Enqueued) && !has(is.Labels, lifecycle.Done) && !has(is.Labels, lifecycle.Failed) {
			out[ticketID(is)] = true
		}
	}
	return out
}

// measureWipe waits until every ticket that was Enqueued when Redis died
// (pending) is queued again (on a queue level, in the delayed set or in a processing list), started
// again, or no longer Enqueued, counting from Redis answering again, empty.
func measureWipe(ctx context.Context, w *world, pending map[string]bool, up time.Time) wipeFigures {
	f := wipeFigures{happened: true, enqueued: len(pending)}
	rdb := redis.NewClient(&redis.Options{Addr: w.redis.Addr()})
	defer rdb.Close()
	deadline := up.Add(60 * time.Second)
	for len(pending) > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		q := strings.Join(queuedRequests(ctx, rdb), "")
		enq := enqueuedNow(w)
		started := startsAfter(w.runLog, up)
		for id := range pending {
			if strings.Contains(q, `"id":"`+id+`"`) || !enq[id] || started[id] {
				delete(pending, id)
				f.worst = time.Since(up)
			}
		}
		time.Sleep(50 * time.Millisecond) // polling Redis with a deadline
	}
	f.missing = len(pending)
	return f
}

// requestLists are the Redis lists that hold a PipelineRequest: the
// default queue level, the other levels and the replicas' processing lists.
func requestLists(ctx context.Context, rdb redis.UniversalClient) []string {
	lists := append([]string{keys.Queue()}, scanAll(ctx, rdb, keys.QueueLevelPattern())...)
	return append(lists, scanAll(ctx, rdb, keys.ProcessingPattern())...)
}

// queuedRequests are the requests waiting, taken or delayed: the entries
// of requestLists and of the delayed set.
func queuedRequests(ctx context.Context, rdb redis.UniversalClient) []string {
	var out []string
	for _, k := range requestLists(ctx, rdb) {
		vs, _ := rdb.LRange(ctx, k, 0, -1).Result()
		out = append(out, vs...)
	}
	delayed, _ := rdb.ZRange(ctx, keys.Delayed(), 0, -1).Result()
	return append(out, delayed...)
}

// ticketID maps a sim issue back to its daemon ticket id.
func ticketID(is trackersim.Issue) string {
	for _, p := range projects {
		if p.Repo == is.Repo {
			return p.ID(is.Number)
		}
	}
	return fmt.Sprintf("%s#%d", is.Repo, is.Number)
}

func countLost(w *world, tickets []*ticket) int {
	terminal := map[string]bool{}
	for _, is := range w.sim.Issues() {
		if has(is.Labels, lifecycle.Done) || has(is.Labels, lifecycle.Failed) {
			terminal[ticketID(is)] = true
		}
	}
	lost := 0
	for _, t := range tickets {
		if !terminal[t.id] {
			lost++
		}
	}
	return lost
}
