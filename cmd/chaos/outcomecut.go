package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// outcomeCutHold is how long trackerCutAtRunEnd keeps the tracker cut:
// past the final write's timeout (the executor's 30 s), so the runs that
// end in the cut give up on the tracker and hand their recorded outcomes
// over instead of writing them themselves.
const outcomeCutHold = 40 * time.Second

// outcomeRecordWait bounds the wait from a pipeline's end to its outcome
// record in Redis: the consumer writes it first thing, so this is load.
const outcomeRecordWait = 10 * time.Second

// outcomesRecorded reports whether every run of ts that the incarnation inc
// ran and that ended after since has its outcome record in Redis.
func outcomesRecorded(ctx context.Context, w *world, ts []*ticket, inc string, since time.Time) bool {
	rdb := w.redisClient()
	if rdb == nil {
		return true
	}
	defer rdb.Close()
	byID := map[string]*ticket{}
	for _, t := range ts {
		byID[t.id] = t
	}
	for _, r := range readRuns(w.runLog) {
		t := byID[r.id]
		if t == nil || r.inc != inc || r.ended.IsZero() || r.ended.Before(since) {
			continue
		}
		ref := platforms.Ref{Platform: t.p.Case.Name, Project: t.p.name, ID: t.id}
		if _, ok, err := runstate.OutcomeOf(ctx, rdb, ref); err != nil || !ok {
			return false
		}
	}
	return true
}

// trackerCutAtRunEnd cuts the tracker for every replica (connections
// refused) while pipelines run, so they end in the cut, and kill -9s the
// busiest replica once its runs have ended and their outcomes are recorded
// in Redis (not written to the tracker). When the tracker answers again
// every outcome must be written, by whichever replica, and no pipeline may
// run a second time: a re-run would mean the outcome was thrown away.
func trackerCutAtRunEnd(ctx context.Context, w *world, feed feeder) *partition {
	p := &partition{Name: "tracker cut for every replica as runs end, past the final write; one killed"}
	p.tickets = feedN(feed, 8, "brief")
	victim, _ := busyReplica(ctx, w, p.tickets, 45*time.Second)
	if victim == nil {
		p.problem("no replica ran a pipeline to cut")
		return p
	}
	w.mu.Lock()
	rs := slices.Clone(w.replicas)
	w.mu.Unlock()
	for _, r := range rs {
		r.trackerNet.Cut()
	}
	// After the cut: a run ending before it may still write its outcome,
	// which removes the record outcomesRecorded waits for.
	cut := time.Now()
	w.record("tracker-cut", "", 0)
	// The victim's runs end by themselves in the cut; it dies once their
	// outcomes are recorded. A kill between a pipeline's end and its record
	// is another fault (the result is known to no one, so it runs again).
	killedInc := victim.inc
	for time.Since(cut) < outcomeCutHold/2 && ctx.Err() == nil && len(runsWorking(w, p.tickets)[killedInc]) > 0 {
		time.Sleep(50 * time.Millisecond) // polling the run log with a deadline
	}
	recordedBy := time.Now().Add(outcomeRecordWait)
	for ctx.Err() == nil && !outcomesRecorded(ctx, w, p.tickets, killedInc, cut) {
		if time.Now().After(recordedBy) {
			p.problem("%s: a run ended in the cut but its outcome was not recorded within %s", victim.inc, outcomeRecordWait)
			break
		}
		time.Sleep(50 * time.Millisecond) // polling Redis with a deadline
	}
	w.killPod(victim)
	time.Sleep(time.Until(cut.Add(outcomeCutHold))) // the fault itself
	restored := time.Now()
	for _, r := range rs {
		if err := r.trackerNet.Restore(); err != nil {
			p.problem("restore: %v", err)
		}
	}
	w.record("tracker-restored", "", 0)
	if err := w.startReplica(victim); err != nil {
		p.problem("restart %s: %v", killedInc, err)
	}
	waitTerminal(ctx, w, p.tickets, partitionWait)

	ids := map[string]bool{}
	for _, t := range p.tickets {
		ids[t.id] = true
	}
	all := readRuns(w.runLog)
	ws := w.sim.Writes()
	ended, ofKilled, rerun, worst := 0, 0, 0, time.Duration(0)
	for _, r := range all {
		if !ids[r.id] || r.ended.IsZero() || r.ended.Before(cut) || r.ended.After(restored) {
			continue
		}
		ended++
		if r.inc == killedInc {
			ofKilled++
		}
		var written time.Time
		for _, wr := range ws {
			if ticketID(trackersim.Issue{Repo: wr.Repo, Number: wr.Number}) == r.id && wr.At.After(r.ended) &&
				stateOf(wr.Before) == lifecycle.InProgress && (stateOf(wr.After) == lifecycle.Done || stateOf(wr.After) == lifecycle.Failed) {
				written = wr.At
				break
			}
		}
		if written.IsZero() {
			p.problem("%s: its run ended in the cut and its outcome was never written", r.id)
			continue
		}
		worst = max(worst, written.Sub(restored))
		for _, r2 := range all {
			if r2.id == r.id && r2.start.After(r.ended) {
				p.problem("%s: run again at %s although its pipeline had ended", r.id, r2.start.Format("15:04:05.000"))
				rerun++
				break
			}
		}
	}
	if ended == 0 || ofKilled == 0 {
		p.problem("runs ending in the cut: %d, of the killed replica %s: %d; the scenario proved nothing", ended, killedInc, ofKilled)
	}
	p.figure("runs ending in the cut / of the killed replica", fmt.Sprintf("%d / %d (%s)", ended, ofKilled, killedInc))
	p.figure("  outcomes written after the restore: worst", "+"+worst.Round(10*time.Millisecond).String())
	p.figure("  pipelines run twice", rerun)
	return p
}
