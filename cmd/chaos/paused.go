package main

import (
	"fmt"
	"time"
)

// freezeSpan is one harness freeze of a replica together with its
// pipelines (world.freeze, a paused VM): which processes the harness held
// stopped, and when. From and until are the real clock, as the run log's
// lines are: from is read after the last SIGSTOP was sent, until before
// the first SIGCONT, so the span lies inside the time the processes were
// stopped.
type freezeSpan struct {
	inc    string
	pid    int          // the daemon
	groups []int        // its pipelines' process groups, stopped with it
	pids   map[int]bool // every process of those groups at the freeze
	from   time.Time
	until  time.Time
}

// holds reports whether the harness held r's pipeline stopped at t.
func (f freezeSpan) holds(r *run, t time.Time) bool {
	return f.pids[r.pid] && t.After(f.from) && t.Before(f.until)
}

// heldStopped reports whether any freeze held r's pipeline stopped at t.
func heldStopped(fz []freezeSpan, r *run, t time.Time) bool {
	for _, f := range fz {
		if f.holds(r, t) {
			return true
		}
	}
	return false
}

// pausedFigures measure the runs frozen together with their replica: a
// paused host cannot stop its own pipelines, which work on after the thaw
// until its run guard or executor sees the run is no longer theirs. Such
// work is overlap only while the successor runs (Report.Overlapping);
// work after the thaw that came when the successor had ended is shown
// here, not counted as overlap.
type pausedFigures struct {
	Freezes int
	// Frozen is the runs working at a freeze, held stopped by it; Rerun
	// how many of their tickets started again elsewhere during the freeze.
	Frozen, Rerun int
	// AfterThaw is how many of the re-run ones logged work after the thaw,
	// WhileSuccessor how many of those worked while a successor ran
	// (counted as overlap too). ThawWorst is the largest time from the
	// thaw to such a run's last work line.
	AfterThaw, WhileSuccessor int
	ThawWorst                 time.Duration
}

// measurePaused finds, for each freeze, the runs it held stopped and what
// they did after the thaw. byTicket is every ticket's runs, sorted by start.
func measurePaused(fz []freezeSpan, byTicket map[string][]*run) pausedFigures {
	p := pausedFigures{Freezes: len(fz)}
	for _, f := range fz {
		// A stopped pid's run is its last one started before the freeze
		// (pids are reused over a long run).
		held := map[int]*run{}
		for _, rs := range byTicket {
			for _, r := range rs {
				if h := held[r.pid]; f.pids[r.pid] && r.start.Before(f.from) && (h == nil || r.start.After(h.start)) {
					held[r.pid] = r
				}
			}
		}
		for _, r := range held {
			p.Frozen++
			var succ []*run
			for _, o := range byTicket[r.id] {
				if o != r && o.start.After(f.from) && o.start.Before(f.until) {
					succ = append(succ, o)
				}
			}
			if len(succ) == 0 {
				continue
			}
			p.Rerun++
			if len(r.work) == 0 || !r.work[len(r.work)-1].After(f.until) {
				continue
			}
			p.AfterThaw++
			p.ThawWorst = max(p.ThawWorst, r.work[len(r.work)-1].Sub(f.until))
			for _, o := range succ {
				if workedDuring(r, o, fz) {
					p.WhileSuccessor++
					break
				}
			}
		}
	}
	return p
}

func (p pausedFigures) print(row func(string, any)) {
	if p.Freezes == 0 {
		return
	}
	row("frozen with its replica: runs / re-run elsewhere during the freeze", fmt.Sprintf("%d / %d", p.Frozen, p.Rerun))
	row("  re-run, worked after the thaw: runs / worst thaw → last work", fmt.Sprintf("%d / +%s", p.AfterThaw, p.ThawWorst.Round(time.Millisecond)))
	row("  of those, while their successor still ran (counted as overlap)", p.WhileSuccessor)
}
