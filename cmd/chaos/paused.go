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
	inc string
	pid int // the daemon
	// groups and procs are what was stopped with it: the process groups
	// below it (run guards, sandbox inits, pipelines) and single
	// processes in groups led from outside (signalTree).
	groups, procs []int
	// keys are the runs (runKey) whose processes were stopped.
	keys  map[string]bool
	from  time.Time
	until time.Time
}

// holds reports whether the harness held r's pipeline stopped at t.
func (f freezeSpan) holds(r *run, t time.Time) bool {
	return f.keys[r.key] && t.After(f.from) && t.Before(f.until)
}

// thawBound is how long a run frozen with its replica may work on after
// the thaw before that counts as overlap: the run guard's first check
// after the thaw fires at once (its ticker missed the freeze), and its
// Redis read has max(guard_check, 1 s) to answer before the kill. Nothing
// of the daemon can stop a paused host's pipeline sooner: the guard wakes
// with it (docs/limitations.md). The chaos replicas' guard_check is
// world.go's timingsYAML.
const thawBound = chaosGuardCheck + time.Second

// thawing reports whether t lies within thawBound after a freeze that held
// r's pipeline stopped: the window no process of the daemon can close.
func thawing(fz []freezeSpan, r *run, t time.Time) bool {
	for _, f := range fz {
		if f.keys[r.key] && r.start.Before(f.from) && !t.Before(f.until) && !t.After(f.until.Add(thawBound)) {
			return true
		}
	}
	return false
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
// until its run guard or executor sees the run is no longer theirs. That
// work is shown here; it counts as overlap (Report.Overlapping) only if it
// comes while the successor runs and later than thawBound after the thaw.
type pausedFigures struct {
	Freezes int
	// Frozen is the runs working at a freeze, held stopped by it; Rerun
	// how many of their tickets started again elsewhere during the freeze.
	Frozen, Rerun int
	// AfterThaw is how many of the re-run ones logged work after the thaw,
	// WhileSuccessor how many of those worked while a successor ran, and
	// BeyondBound how many of these did so later than thawBound after the
	// thaw (counted as overlap too). ThawWorst is the largest time from
	// the thaw to such a run's last work line.
	AfterThaw, WhileSuccessor, BeyondBound int
	ThawWorst                              time.Duration
}

// measurePaused finds, for each freeze, the runs it held stopped and what
// they did after the thaw. byTicket is every ticket's runs, sorted by start.
func measurePaused(fz []freezeSpan, byTicket map[string][]*run) pausedFigures {
	p := pausedFigures{Freezes: len(fz)}
	for _, f := range fz {
		// The runs whose processes it stopped, started before it.
		var held []*run
		for _, rs := range byTicket {
			for _, r := range rs {
				if f.keys[r.key] && r.start.Before(f.from) {
					held = append(held, r)
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
				if workedDuring(r, o, fz, false) {
					p.WhileSuccessor++
					if workedDuring(r, o, fz, true) {
						p.BeyondBound++
					}
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
	row("  of those, while their successor still ran: all / later than the thaw bound (overlap)", fmt.Sprintf("%d / %d (bound %s)", p.WhileSuccessor, p.BeyondBound, thawBound))
}
