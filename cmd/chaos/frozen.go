package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// frozenBurst is how many "frozen" tickets are fed before one daemon is
// frozen: enough that each replica is likely running one.
const frozenBurst = 6

// frozenFigures measure the frozen daemon: one replica's daemon process
// SIGSTOPped alone, as a stalled process (not a paused VM) is, its
// pipelines left running. Its run guards must kill those pipelines on
// their own, before the tickets run again elsewhere: the guards hold the
// daemon's liveness key to its presence trust, so each pipeline is dead
// before the key expires and a successor can start (OverlapWorst < 0).
type frozenFigures struct {
	enabled bool
	// Runs is the frozen daemon's pipelines working at the freeze; Killed
	// how many of them were gone while it was still frozen.
	Runs, Killed int
	// KillWorst: freeze → the last of them gone.
	KillWorst time.Duration
	// Rerun is how many of their tickets started again elsewhere while the
	// daemon was frozen; OverlapWorst is the largest (a frozen run's last
	// work line − its successor's start): negative when every frozen run
	// was dead before its successor started.
	Rerun int
	// LastAttempt counts the frozen runs that were their ticket's last
	// attempt: reverted, such a ticket is Failed, not run again.
	LastAttempt  int
	OverlapWorst time.Duration
	err          string
}

func (f frozenFigures) ok() bool {
	return !f.enabled || (f.err == "" && f.Runs > 0 && f.Killed == f.Runs && f.Rerun == f.Runs-f.LastAttempt && f.OverlapWorst < 0)
}

func (f frozenFigures) print(row func(string, any)) {
	if !f.enabled {
		return
	}
	if f.err != "" {
		row("daemon SIGSTOPped alone, pipelines running", "FAILED: "+f.err)
		return
	}
	row("daemon alone SIGSTOPped: its pipelines / killed by guard", fmt.Sprintf("%d / %d", f.Runs, f.Killed))
	row("  freeze → every such pipeline gone: worst", f.KillWorst.Round(10*time.Millisecond))
	row("  re-run elsewhere while frozen / last attempts (Failed instead)", fmt.Sprintf("%d / %d", f.Rerun, f.LastAttempt))
	row("  overlap with successor: worst (negative: dead before it started)", f.OverlapWorst.Round(10*time.Millisecond))
}

// freezeDaemonOnly waits for a first attempt of one of ids to run on a
// replica, SIGSTOPs that replica's daemon pid only (not its pipelines'
// groups), waits for the run guards to kill its pipelines and for their
// tickets to start again elsewhere, and thaws it.
func (w *world) freezeDaemonOnly(ctx context.Context, ids []string) frozenFigures {
	f := frozenFigures{enabled: true}
	var r *replica
	var pid int
	var inc string
	deadline := time.Now().Add(30 * time.Second)
	for r == nil && time.Now().Before(deadline) && ctx.Err() == nil {
		for _, run := range readRuns(w.runLog) {
			if run.attempt != 1 || !slices.Contains(ids, run.id) || !run.ended.IsZero() {
				continue
			}
			w.mu.Lock()
			for _, c := range w.replicas {
				if c.alive && !c.stopped && c.inc == run.inc {
					r, pid, inc = c, c.cmd.Process.Pid, c.inc
				}
			}
			w.mu.Unlock()
			if r != nil {
				break
			}
		}
		time.Sleep(20 * time.Millisecond) // polling the run log with a deadline
	}
	if r == nil {
		f.err = "no frozen-tagged ticket ran within 30 s"
		return f
	}
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	frozeAt := time.Now()
	w.mu.Lock()
	r.stopped = true
	w.mu.Unlock()
	w.record("stop", inc, pid)
	defer func() {
		_ = syscall.Kill(pid, syscall.SIGCONT)
		w.mu.Lock()
		r.stopped = false
		w.mu.Unlock()
		w.record("cont", inc, pid)
	}()

	// Its pipelines working at the freeze: started, not ended, logging;
	// each with the processes of its sandbox (its init and the pipeline,
	// host pids), found below the frozen daemon by the run key in their
	// environment. A pipeline is gone when its whole sandbox is.
	var victims []*run
	for _, run := range readRuns(w.runLog) {
		if run.inc == inc && run.ended.IsZero() && run.end.After(frozeAt.Add(-500*time.Millisecond)) {
			victims = append(victims, run)
		}
	}
	boxes := runProcs(pid, true)
	f.Runs = len(victims)
	// Killed before the heartbeat TTL (3 s) is up, or within a check of it.
	gone := time.Now().Add(10 * time.Second)
	found := 0
	for _, v := range victims {
		pids := boxes[v.key]
		if len(pids) > 0 {
			found++
		}
		for anyAlive(pids) && time.Now().Before(gone) {
			time.Sleep(10 * time.Millisecond) // polling the process table with a deadline
		}
		if !anyAlive(pids) {
			f.Killed++
			f.KillWorst = max(f.KillWorst, time.Since(frozeAt))
		}
	}
	if len(victims) > 0 && found == 0 {
		// One may end by itself as the daemon stops; none found means the
		// harness cannot see the runs' processes, and proves nothing.
		f.err = fmt.Sprintf("no sandbox of %s's %d runs found below its daemon (pid %d)", inc, len(victims), pid)
		return f
	}
	// Each ticket runs again elsewhere while the daemon still sleeps.
	f.OverlapWorst = -time.Hour
	rerun := time.Now().Add(20 * time.Second)
	for _, v := range victims {
		if v.attempt >= maxAttempts {
			// Not waited for: a victim that never runs again must not use
			// up the deadline of those after it.
			f.LastAttempt++
			continue
		}
		var next *run
		for next == nil && time.Now().Before(rerun) && ctx.Err() == nil {
			for _, o := range readRuns(w.runLog) {
				if o.id == v.id && o.start.After(frozeAt) && o.inc != inc {
					next = o
					break
				}
			}
			if next == nil {
				time.Sleep(50 * time.Millisecond) // polling the run log with a deadline
			}
		}
		if next == nil {
			continue
		}
		f.Rerun++
		var last time.Time
		for _, o := range readRuns(w.runLog) {
			if o.key == v.key && o.id == v.id && len(o.work) > 0 {
				last = o.work[len(o.work)-1]
			}
		}
		f.OverlapWorst = max(f.OverlapWorst, last.Sub(next.start))
	}
	return f
}

// anyAlive reports whether any of pids is alive.
func anyAlive(pids []int) bool {
	return slices.ContainsFunc(pids, alive)
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	rest := b[bytes.LastIndexByte(b, ')')+1:]
	return !bytes.HasPrefix(bytes.TrimSpace(rest), []byte("Z"))
}
