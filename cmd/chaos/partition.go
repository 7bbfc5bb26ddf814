package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentsmithd/agentsmithd/cmd/chaos/internal/netproxy"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/trust"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// Network partitions: faults kill -9 does not show, because the replica
// keeps running and believes it is fine. Each goes through the replicas'
// netproxy (world.go) and runs on its own after the other faults, with
// its own tickets, so its row's figures are its own.

// partition is one partition scenario's row of the table.
type partition struct {
	Name    string
	tickets []*ticket
	// Figures are the scenario's own measurements, in order.
	Figures [][2]string
	// Problems are broken promises the scenario checks itself (a write
	// after the trust window, a result thrown away, a ticket not claimed);
	// any fails the run.
	Problems []string
	// Lost, Overlapping and Stale are the run's figures restricted to the
	// scenario's tickets (analyse fills them in).
	Lost, Overlapping, Stale int
}

func (p *partition) figure(k string, v any) {
	p.Figures = append(p.Figures, [2]string{k, fmt.Sprint(v)})
}

func (p *partition) problem(format string, args ...any) {
	p.Problems = append(p.Problems, fmt.Sprintf(format, args...))
}

// feeder creates one triggered ticket of project pr with tag in its title.
type feeder func(pr project, tag string) *ticket

// How long each partition lasts: longer than a heartbeat TTL, so another
// replica can take a run from a replica cut from Redis.
const (
	splitBrainHold = 5 * time.Second
	trackerCutHold = 5 * time.Second
	redisSlowHold  = 6 * time.Second
	redisFlapHold  = 6 * time.Second
	partitionWait  = 60 * time.Second // deadline for a scenario's tickets to end
)

// runsWorking returns, per replica incarnation, the runs of ts still working:
// started, not ended, with a line logged in the last 400 ms (a tick every
// 100 ms). Runs of other tickets (a hanging one of the earlier faults, say)
// are left out: the scenario measures its own.
func runsWorking(w *world, ts []*ticket) map[string][]*run {
	ids := map[string]bool{}
	for _, t := range ts {
		ids[t.id] = true
	}
	out := map[string][]*run{}
	now := time.Now()
	for _, r := range readRuns(w.runLog) {
		if ids[r.id] && r.ended.IsZero() && now.Sub(r.end) < 400*time.Millisecond {
			out[r.inc] = append(out[r.inc], r)
		}
	}
	return out
}

// busyReplica waits until a live replica runs a pipeline of ts and returns
// the busiest one with those runs.
func busyReplica(ctx context.Context, w *world, ts []*ticket, within time.Duration) (*replica, []*run) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		working := runsWorking(w, ts)
		var best *replica
		w.mu.Lock()
		for _, r := range w.replicas {
			if r.alive && !r.stopped && len(working[r.inc]) > 0 &&
				(best == nil || len(working[r.inc]) > len(working[best.inc])) {
				best = r
			}
		}
		var runs []*run
		if best != nil {
			runs = working[best.inc]
		}
		w.mu.Unlock()
		if best != nil {
			return best, runs
		}
		time.Sleep(50 * time.Millisecond) // polling the run log with a deadline
	}
	return nil, nil
}

// waitTerminal waits until every ticket of ts is Done or Failed.
func waitTerminal(ctx context.Context, w *world, ts []*ticket, within time.Duration) time.Time {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) && ctx.Err() == nil && countLost(w, ts) > 0 {
		time.Sleep(100 * time.Millisecond) // polling the tracker with a deadline
	}
	return time.Now()
}

func feedN(feed feeder, n int, tag string) []*ticket {
	var out []*ticket
	for i := range n {
		out = append(out, feed(webhookProjects()[i%len(webhookProjects())], tag))
	}
	return out
}

// splitBrain cuts a replica that runs pipelines from Redis while it still
// reaches the tracker. It cannot renew its heartbeats or its liveness, so
// another replica takes its runs once the heartbeats expire; before that
// it must have stopped its pipelines and stopped writing labels. Every
// label write is fenced by a Redis read of the run's token, so the promise
// is: no label write by it after the cut beyond one already in flight, and
// none at all after its trust window (the heartbeat's, the widest a run
// trusts: pkg/trust).
func splitBrain(ctx context.Context, w *world, feed feeder) *partition {
	p := &partition{Name: "replica cut from Redis, reaching the tracker (split brain)"}
	p.tickets = feedN(feed, 6, "medium")
	victim, runs := busyReplica(ctx, w, p.tickets, 45*time.Second)
	if victim == nil {
		p.problem("no replica ran a pipeline to cut")
		return p
	}
	inc := victim.inc
	cut, restored := cutFor(ctx, w, p, victim, victim.redisNet, "redis", splitBrainHold)

	// Every label write of a run is fenced by the replica's liveness
	// (trusted for 60 % of its TTL after each renewal) and the run's
	// heartbeat (90 %): the narrower, liveness, is how long the cut replica
	// may still believe it owns anything.
	window := min(trust.Fraction(instanceTTL, trust.DefaultPresenceTrust).Trusted,
		trust.Fraction(heartbeatTTL, trust.DefaultHeartbeatTrust).Trusted)
	// A claim's write (from no lifecycle label) is fenced by its claim lock
	// instead, which no other replica can take before it expires: its
	// trust window, counted from a lock asked for at the latest at the cut.
	claimWindow := trust.Fraction(claimLockTTL, trust.DefaultClaimLockTrust).Trusted
	// The earliest another replica can take its runs: its liveness key and
	// its heartbeats were last renewed at most one renew interval before
	// the cut, and housekeeping acts on whichever expires first.
	takeover := min(instanceTTL-instanceTTL/4, heartbeatTTL-heartbeatRenew)
	writes, last := 0, time.Duration(0)
	for _, wr := range w.sim.Writes() {
		if wr.Writer != inc || !wr.At.After(cut) || !wr.At.Before(restored) {
			continue
		}
		writes++
		last = max(last, wr.At.Sub(cut))
		allowed := window
		if len(lc(wr.Before)) == 0 {
			allowed = claimWindow
		}
		if wr.At.After(cut.Add(allowed)) {
			// Counted as a stale write of the run (analyse adds it).
			w.lateWrites = append(w.lateWrites, fmt.Sprintf("%s %s#%d by %s: %v → %v (+%s after its Redis was cut, past the %s trust window)",
				wr.At.Format("15:04:05.000"), wr.Repo, wr.Number, inc, lc(wr.Before), lc(wr.After), wr.At.Sub(cut).Round(time.Millisecond), allowed))
		}
	}
	// How long its pipelines kept working, and when their tickets ran again.
	all := readRuns(w.runLog)
	var worked, again time.Duration
	first := time.Duration(-1)
	rerun := 0
	for _, r := range runs {
		for _, r2 := range all {
			if r2.key != r.key {
				continue
			}
			for _, t := range r2.work {
				if t.After(cut) {
					worked = max(worked, t.Sub(cut))
				}
			}
		}
		for _, r2 := range all {
			if r2.id == r.id && r2.inc != inc && r2.start.After(cut) {
				again = max(again, r2.start.Sub(cut))
				if first < 0 || r2.start.Sub(cut) < first {
					first = r2.start.Sub(cut)
				}
				rerun++
				break
			}
		}
	}
	if last >= takeover {
		p.problem("%s wrote a label %s after the cut, past the earliest takeover (%s)", inc, last, takeover)
	}
	if worked >= takeover {
		p.problem("a pipeline of %s worked %s after the cut, past the earliest takeover (%s)", inc, worked, takeover)
	}
	p.figure("cut replica / its runs working at the cut", fmt.Sprintf("%s / %d", inc, len(runs)))
	p.figure("its label writes after the cut (last)", fmt.Sprintf("%d (+%s)", writes, last.Round(time.Millisecond)))
	p.figure("  earliest takeover by another replica", "+"+takeover.String())
	p.figure("  writes after its trust window (+"+window.String()+"; a claim's lock: +"+claimWindow.String()+")", countAfter(w.lateWrites, inc))
	p.figure("its pipelines' last work after the cut", fmt.Sprintf("+%s (< +%s)", worked.Round(10*time.Millisecond), takeover))
	if rerun > 0 {
		p.figure("its runs running again elsewhere: n / first / worst", fmt.Sprintf("%d / %s / %s", rerun, signed(first), signed(again)))
	} else {
		// Its runs ended before the cut could matter (and wrote before it,
		// or lost their outcome write and ended as housekeeping decided).
		p.figure("its runs running again elsewhere: n / first / worst", "0 / - / -")
	}
	return p
}

func countAfter(lines []string, inc string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, " by "+inc+": ") {
			n++
		}
	}
	return n
}

// trackerCut cuts a replica that runs pipelines from the tracker while it
// reaches Redis. Its heartbeats go on, so its runs stay its own; runs that
// end during the cut cannot write their outcome, and must retry until the
// tracker answers again instead of dropping the result (a re-run would
// mean the result was thrown away).
func trackerCut(ctx context.Context, w *world, feed feeder) *partition {
	p := &partition{Name: "replica cut from the tracker, reaching Redis"}
	p.tickets = feedN(feed, 6, "brief")
	victim, _ := busyReplica(ctx, w, p.tickets, 45*time.Second)
	if victim == nil {
		p.problem("no replica ran a pipeline to cut")
		return p
	}
	inc := victim.inc
	cut, restored := cutFor(ctx, w, p, victim, victim.trackerNet, "tracker", trackerCutHold)

	all := readRuns(w.runLog)
	ws := w.sim.Writes()
	ended, rerun, worst := 0, 0, time.Duration(0)
	for _, r := range all {
		if r.inc != inc || r.ended.IsZero() || r.ended.Before(cut) || r.ended.After(restored) {
			continue
		}
		ended++
		var written time.Time
		for _, wr := range ws {
			if wr.Writer == inc && ticketID(trackersim.Issue{Repo: wr.Repo, Number: wr.Number}) == r.id && wr.At.After(r.ended) &&
				(stateOf(wr.After) == lifecycle.Done || stateOf(wr.After) == lifecycle.Failed) && stateOf(wr.Before) == lifecycle.InProgress {
				written = wr.At
				break
			}
		}
		if written.IsZero() {
			p.problem("%s: its run ended during the cut and %s never wrote the outcome", r.id, inc)
			continue
		}
		worst = max(worst, written.Sub(restored))
		for _, r2 := range all {
			if r2.id == r.id && r2.start.After(r.ended) {
				p.problem("%s: run again at %s although its result was kept", r.id, r2.start.Format("15:04:05.000"))
				rerun++
				break
			}
		}
	}
	if ended == 0 {
		p.problem("no run of %s ended during the cut: the scenario proved nothing", inc)
	}
	p.figure("cut replica / its runs ending during the cut", fmt.Sprintf("%s / %d", inc, ended))
	p.figure("  their outcome written after the restore: worst", "+"+worst.Round(10*time.Millisecond).String())
	p.figure("  results thrown away (run again)", rerun)
	return p
}

// redisSlow makes Redis slow for every replica (0.5-3 s per command, past
// the clients' 3 s read timeout at the top), then flapping (cut and
// restored every 0.2-0.8 s), then healthy again.
func redisSlow(ctx context.Context, w *world, feed feeder, seed uint64) *partition {
	p := &partition{Name: "Redis slow (0.5-3 s per command), then flapping"}
	rng := rand.New(rand.NewPCG(seed, seed^0xf1a9))
	lat := func() time.Duration {
		return 500*time.Millisecond + time.Duration(rng.Int64N(int64(2500*time.Millisecond)))
	}
	var mu sync.Mutex
	w.mu.Lock()
	rs := slices.Clone(w.replicas)
	w.mu.Unlock()
	p.tickets = feedN(feed, 8, "quick")
	for _, r := range rs {
		r.redisNet.SetLatency(func() time.Duration { mu.Lock(); defer mu.Unlock(); return lat() })
	}
	w.record("redis-slow", "", 0)
	time.Sleep(redisSlowHold) // the fault itself
	for _, r := range rs {
		r.redisNet.SetLatency(nil)
	}
	p.tickets = append(p.tickets, feedN(feed, 8, "quick")...)
	w.record("redis-flapping", "", 0)
	flaps := 0
	for end := time.Now().Add(redisFlapHold); time.Now().Before(end); flaps++ {
		for _, r := range rs {
			r.redisNet.Cut()
		}
		time.Sleep(200*time.Millisecond + time.Duration(rng.Int64N(int64(600*time.Millisecond)))) // the fault itself
		for _, r := range rs {
			if err := r.redisNet.Restore(); err != nil {
				p.problem("restore: %v", err)
			}
		}
		time.Sleep(200*time.Millisecond + time.Duration(rng.Int64N(int64(600*time.Millisecond))))
	}
	healthy := time.Now()
	w.record("redis-healthy", "", 0)
	done := waitTerminal(ctx, w, p.tickets, partitionWait)
	p.figure("slow / flapping (cuts)", fmt.Sprintf("%s / %s (%d)", redisSlowHold, redisFlapHold, flaps))
	p.figure("  Redis healthy → every ticket of the phase ended", "+"+done.Sub(healthy).Round(10*time.Millisecond).String())
	return p
}

// receiverCut routes one delivery to a receiver cut from Redis: it must
// answer 503 (not claim, not drop silently), and the ticket must still be
// claimed afterwards. The project is webhook-only (GitLab), and GitLab
// does not redeliver (trackersim/hookstate.go), so the TriggerSweeper
// of whichever replica leads housekeeping claims it.
func receiverCut(ctx context.Context, w *world, feed feeder) *partition {
	p := &partition{Name: "receiver cut from Redis (webhook answered 503)"}
	var gl project
	for _, pr := range projects {
		if pr.webhook && !pr.polling {
			gl = pr
			break
		}
	}
	w.mu.Lock()
	var victim *replica
	for _, r := range w.replicas {
		if r.alive && !r.stopped {
			victim = r
			break
		}
	}
	w.pin, w.answers = victim, nil
	w.mu.Unlock()
	victim.redisNet.Cut()
	w.record("redis-cut", victim.inc, victim.cmd.Process.Pid)
	t := feed(gl, "quick")
	p.tickets = []*ticket{t}
	var answered time.Time
	var codes []answer
	iid := regexp.MustCompile(`"iid":\s*` + strconv.Itoa(t.n) + `\b`)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && ctx.Err() == nil; {
		// Other deliveries (events of other tickets) reach the pinned
		// receiver too; the scenario's is the GitLab one naming its issue.
		codes = nil
		w.mu.Lock()
		for _, a := range w.answers {
			if bytes.Contains(a.body, []byte(gl.Repo)) && iid.Match(a.body) {
				codes = append(codes, a)
			}
		}
		w.mu.Unlock()
		if len(codes) > 0 {
			answered = codes[0].at
			break
		}
		time.Sleep(20 * time.Millisecond) // polling the load balancer with a deadline
	}
	w.mu.Lock()
	w.pin = nil
	w.mu.Unlock()
	if err := victim.redisNet.Restore(); err != nil {
		p.problem("restore: %v", err)
	}
	w.record("redis-restored", victim.inc, victim.cmd.Process.Pid)
	if len(codes) == 0 || codes[0].code != 503 {
		var got []int
		for _, a := range codes {
			got = append(got, a.code)
		}
		p.problem("the cut receiver answered %v, want 503", got)
		return p
	}
	// Claimed: the ticket left Pending (a claim writes pending → enqueued).
	var claimed time.Time
	var by string
	for deadline := time.Now().Add(30 * time.Second); claimed.IsZero() && time.Now().Before(deadline) && ctx.Err() == nil; {
		for _, wr := range w.sim.Writes() {
			if wr.Repo == gl.Repo && wr.Number == t.n && stateOf(wr.Before) == lifecycle.Pending && stateOf(wr.After) != lifecycle.Pending {
				claimed, by = wr.At, wr.Writer
				break
			}
		}
		time.Sleep(50 * time.Millisecond) // polling the tracker with a deadline
	}
	if claimed.IsZero() {
		p.problem("%s: never claimed after the 503", t.id)
	}
	waitTerminal(ctx, w, p.tickets, partitionWait)
	p.figure("cut receiver / its answer", fmt.Sprintf("%s / %d", victim.inc, codes[0].code))
	p.figure("  503 → ticket claimed anyway (by)", fmt.Sprintf("%s (%s)", signed(claimed.Sub(answered)), by))
	return p
}

// signed formats d with its sign: a claim can land before the 503 does
// (another replica's sweep), which is fine but must read as such.
func signed(d time.Duration) string {
	if d < 0 {
		return "-" + (-d).Round(10*time.Millisecond).String()
	}
	return "+" + d.Round(10*time.Millisecond).String()
}

// cutFor cuts one of the victim's links for hold, restores it, records both
// in the event log (kind-cut, kind-restored), and waits for the
// partition's tickets to end.
func cutFor(ctx context.Context, w *world, p *partition, victim *replica, link *netproxy.Proxy, kind string,
	hold time.Duration) (cut, restored time.Time) {
	inc, pid := victim.inc, victim.cmd.Process.Pid
	cut = time.Now()
	link.Cut()
	w.record(kind+"-cut", inc, pid)
	time.Sleep(hold) // the fault itself
	restored = time.Now()
	if err := link.Restore(); err != nil {
		p.problem("restore: %v", err)
	}
	w.record(kind+"-restored", inc, pid)
	waitTerminal(ctx, w, p.tickets, partitionWait)
	return cut, restored
}
