package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/simcases"
	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// Staged tickets (-stages plan,implement,test): every platform gets a
// second project, on its own repository, whose pipeline has those stages,
// and the steady feed alternates between the plain and the staged
// projects, so half of its tickets run stage after stage through the same
// kills, freezes and tracker faults. The bursts of the other scenarios
// (wipe, frozen daemon, partitions, rolling restart) stay on the plain
// projects, whose timings they measure. Each stage's run logs its stage
// and the stage whose result it was handed (pipelineScript); judgeStages
// reads them. A kill that lands between a stage's end and the next stage's
// push is made likely by stageWindowKills: it watches the run log and
// kills the replica of a stage that just ended, within stageKillDelay.

// stagedRepos are the staged projects' repositories, per platform: under
// owners of their own where the platform has them, so the housekeeping
// cycles and pollers list them as they list the plain ones, one project
// per scope. Two GitHub projects of one owner are listed by one search
// (lifecycle.ListOpen), and at the chaos timings (1 s polls and slow
// cycles) that spends GitHub's search limit, 30 a minute, within seconds:
// the StaleJobDetector then sees no in-progress ticket until the limit
// resets, and a killed run waits a minute or more.
var stagedRepos = map[string]string{
	simcases.GitHub.Name: "stagedorg/app", simcases.GitLab.Name: "stagedgrp/app",
	simcases.AzureDevOps.Name: "stagedorg/webapp", simcases.Jira.Name: "STG",
}

// useStages sets the run's projects: baseProjects, and with stages a
// staged twin of each, whose stages named in gates wait for approval.
func useStages(stages, gates []string) {
	projects = baseProjects
	if len(stages) == 0 {
		return
	}
	projects = slices.Clone(baseProjects)
	for _, p := range baseProjects {
		p.Case = p.Case.WithRepo(stagedRepos[p.Case.Name])
		p.name += "-staged"
		p.stages = slices.Clone(stages)
		p.gates = slices.Clone(gates)
		projects = append(projects, p)
	}
}

// plainProjects are the run's projects without stages.
func plainProjects() []project {
	var out []project
	for _, p := range projects {
		if len(p.stages) == 0 {
			out = append(out, p)
		}
	}
	return out
}

// failTitle is the title's tail that makes a ticket's pipeline fail: in
// every run for a project without stages, in one stage (picked by k) for a
// staged one.
func failTitle(p project, k int) string {
	if len(p.stages) == 0 {
		return " fail"
	}
	return " fail@" + p.stages[k%len(p.stages)] + "."
}

// stageKillDelay bounds how long after a stage's end line
// stageWindowKills kills its replica: within it the daemon records the
// stage's result, comments, moves the labels to the next stage and pushes
// its request (finish.go stageSucceeded), a few tracker calls, each up to
// 300 ms of injected latency.
const stageKillDelay = 400 * time.Millisecond

// stageWindowKills kills, every every, the replica whose run of a stage
// (not the last) has just logged its end, a random 0–stageKillDelay
// later, and restarts it a second after: kill -9 between a stage's end
// and the next stage's push. Each is recorded as a kill (the recovery
// figures count it) and as a "stage-kill" naming the ticket and stage.
func stageWindowKills(ctx context.Context, w *world, every time.Duration, rnd func(int) int) {
	tail := &logTail{path: w.runLog}
	for sleepCtx(ctx, every) {
		tail.skip()
		var r *replica
		var line []string
		for r == nil && ctx.Err() == nil {
			for _, fs := range tail.next() {
				if r = w.stageEnd(fs); r != nil {
					line = fs
					break
				}
			}
			if r == nil {
				sleepCtx(ctx, 20*time.Millisecond) // tailing a file
			}
		}
		if r == nil {
			return
		}
		sleepCtx(ctx, time.Duration(rnd(int(stageKillDelay/time.Millisecond)))*time.Millisecond)
		if !w.killPod(r) {
			continue
		}
		w.mu.Lock()
		w.stageKills = append(w.stageKills, stageKill{at: time.Now(), id: line[1], stage: line[6]})
		w.mu.Unlock()
		w.logf("stage-kill %s after %s's stage %s ended", r.inc, line[1], line[6])
		sleepCtx(ctx, time.Second)
		if err := w.startReplica(r); err != nil {
			fmt.Fprintf(w.logw, "chaos: restart %d: %v\n", r.slot, err)
		}
	}
}

// stageKill is one kill stageWindowKills made.
type stageKill struct {
	at        time.Time
	id, stage string
}

// stageEnd is the live, running replica whose pipeline logged fs, when fs
// is the end line of a stage with a next one; else nil.
func (w *world) stageEnd(fs []string) *replica {
	if len(fs) != 8 || fs[0] != "end" || fs[6] == "-" {
		return nil
	}
	var last bool
	for _, p := range projects {
		last = last || isLast(p.stages, fs[6])
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.replicas {
		if !last && r.alive && !r.stopped && r.cmd != nil && r.inc == fs[3] {
			return r
		}
	}
	return nil
}

// isLast reports whether name is the last of names, the stages in order
// (names, not labels: a stage's label is lifecycle.Labels').
func isLast(names []string, name string) bool {
	return len(names) > 0 && name == names[len(names)-1]
}

// logTail reads the lines appended to a file since the last read.
type logTail struct {
	path string
	off  int64
}

// skip moves to the file's end.
func (t *logTail) skip() {
	if fi, err := os.Stat(t.path); err == nil {
		t.off = fi.Size()
	}
}

// next returns the fields of each whole line appended since the last call.
func (t *logTail) next() [][]string {
	f, err := os.Open(t.path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return nil
	}
	var out [][]string
	rd := bufio.NewReader(f)
	for {
		l, err := rd.ReadString('\n')
		if err != nil {
			return out // a partial line is read again next time
		}
		t.off += int64(len(l))
		out = append(out, strings.Fields(l))
	}
}

// stageFigures judge the staged tickets from the run log and their final
// labels (judgeStages).
type stageFigures struct {
	Stages                []string
	Tickets, Done, Fail   int
	Runs                  int
	RerunKilled           int // a stage run again after its run was killed or lost (no end line)
	RerunFailed           int // ... after its run failed (the stage's retry)
	RerunSucceeded        int // ... after its run succeeded: the success was not taken (killed before the label write)
	RerunRejected         int // ... after its run succeeded and an approver rejected the gated stage after it
	NoResult              int // runs of a later stage not handed the previous stage's result
	WindowKills           int // stageWindowKills' kills
	WindowRerun, WindowOn int // of those: the stage ran again / the next stage ran
	// FailedAfterSuccess are the tickets that ended Failed while their
	// last run was a stage, not the last, that succeeded, and no person
	// failed them: the next stage never ran, though nothing asked it not
	// to. A crash must not do that (the attempt count the next stage
	// inherits from the one before it when a kill lands before the
	// executor starts it over did; docs/limitations.md), so each fails the
	// run. FailedByDecision are the ones a person failed: the approver
	// cancelled them, or rejected a gate more than max_rejections times.
	FailedAfterSuccess []string
	FailedByDecision   int
	// FailedRunsLost are the ones whose stage ran its last attempt and
	// exited 0, and whose success the daemon never took (the ticket still
	// shows that stage): every attempt's run lost its ownership before its
	// outcome was recorded, and the ticket failed with its attempts spent,
	// as a ticket without stages does (the kill rows' "not re-run").
	FailedRunsLost int
	// Problems are the failures: a stage skipped, started before the one
	// before it succeeded, or gone back to; a Done ticket whose stages'
	// last runs did not all succeed; a run handed another stage's result;
	// a gated stage run without an approval after the stage before it
	// succeeded.
	Problems []string
}

func (f stageFigures) ok() bool { return len(f.Problems) == 0 && len(f.FailedAfterSuccess) == 0 }

// judgeStages checks each staged ticket's runs (byTicket, each sorted by
// start) against its project's stages: a ticket runs its stages in order,
// a stage only after the one before it succeeded, never goes back, and
// ends Done only after the last run of every stage succeeded; a gated
// stage runs only after an approval that follows the success of the
// stage before it. done and failed say how each ticket ended, decided
// what the approver posted on each. Re-runs of a stage are counted by
// what ended the run before them; kills names stageWindowKills' kills;
// shows is the stage each ticket's labels show at the end.
func judgeStages(tickets []*ticket, byTicket map[string][]*run, done, failed map[string]bool, kills []stageKill, decided map[string]*ticketDecisions,
	shows map[string]string) stageFigures {
	var f stageFigures
	problem := func(id, format string, args ...any) {
		f.Problems = append(f.Problems, id+": "+fmt.Sprintf(format, args...))
	}
	for _, t := range tickets {
		st := t.p.stages
		if len(st) == 0 {
			continue
		}
		f.Stages = st
		f.Tickets++
		switch {
		case done[t.id]:
			f.Done++
		case failed[t.id]:
			f.Fail++
		}
		dec := decided[t.id]
		if dec == nil {
			dec = &ticketDecisions{}
		}
		cur := -1
		last := make([]*run, len(st)) // each stage's latest run so far
		for _, r := range byTicket[t.id] {
			f.Runs++
			i := slices.Index(st, r.stage)
			switch {
			case i < 0:
				problem(t.id, "a run (attempt %d) in stage %q, not one of %v", r.attempt, r.stage, st)
				continue
			case i < cur:
				problem(t.id, "stage %s ran at %s after stage %s had started", r.stage, r.start.Format("15:04:05.000"), st[cur])
			case i > cur+1:
				problem(t.id, "stage %s started at %s, stage %s skipped", r.stage, r.start.Format("15:04:05.000"), st[cur+1])
			case i == cur+1 && i > 0 && !succeededBy(last[i-1], r.start):
				problem(t.id, "stage %s started at %s before stage %s succeeded", r.stage, r.start.Format("15:04:05.000"), st[i-1])
			case i > 0 && slices.Contains(t.p.gates, r.stage) && last[i-1] != nil && !anyBetween(dec.approvals, last[i-1].ended, r.start):
				problem(t.id, "gated stage %s started at %s without an approval after stage %s succeeded at %s", r.stage,
					r.start.Format("15:04:05.000"), st[i-1], last[i-1].ended.Format("15:04:05.000"))
			}
			if p := last[i]; p != nil {
				switch {
				case p.ended.IsZero() || p.ended.After(r.start):
					f.RerunKilled++
				case p.failed:
					f.RerunFailed++
				case anyBetween(dec.rejections, p.ended, r.start):
					f.RerunRejected++
				default:
					f.RerunSucceeded++
				}
			}
			switch {
			case i == 0 && r.prev != "":
				problem(t.id, "stage %s was handed stage %s's result", r.stage, r.prev)
			case i > 0 && r.prev == "":
				f.NoResult++
			case i > 0 && r.prev != st[i-1]:
				problem(t.id, "stage %s was handed stage %s's result, not stage %s's", r.stage, r.prev, st[i-1])
			}
			last[i], cur = r, max(cur, i)
		}
		if rs := byTicket[t.id]; failed[t.id] && len(rs) > 0 {
			if r := rs[len(rs)-1]; succeededBy(r, time.Time{}) && !isLast(st, r.stage) {
				switch ran, now := r.stage, shows[t.id]; {
				case len(dec.cancels) > 0 || len(dec.rejections) > lifecycle.DefaultMaxRejections:
					f.FailedByDecision++
				case r.attempt >= maxAttempts && ran == now:
					f.FailedRunsLost++
				default:
					f.FailedAfterSuccess = append(f.FailedAfterSuccess, fmt.Sprintf("%s: Failed after stage %s succeeded (attempt %d), no person failed it", t.id, r.stage, r.attempt))
				}
			}
		}
		if done[t.id] {
			for i, r := range last {
				if !succeededBy(r, time.Time{}) {
					problem(t.id, "Done, but the last run of stage %s did not succeed (%s)", st[i], runEnd(r))
				}
			}
		}
	}
	for _, k := range kills {
		f.WindowKills++
		for _, r := range byTicket[k.id] {
			if r.start.After(k.at) {
				if name, killed := r.stage, k.stage; name == killed {
					f.WindowRerun++
				} else {
					f.WindowOn++
				}
				break
			}
		}
	}
	return f
}

// anyBetween reports whether one of ts lies after from and before to.
func anyBetween(ts []time.Time, from, to time.Time) bool {
	return slices.ContainsFunc(ts, func(t time.Time) bool { return t.After(from) && t.Before(to) })
}

// succeededBy reports whether r ended by itself with exit 0, before t
// unless t is zero.
func succeededBy(r *run, t time.Time) bool {
	return r != nil && !r.ended.IsZero() && !r.failed && (t.IsZero() || r.ended.Before(t))
}

// runEnd says how r ended, for a problem line.
func runEnd(r *run) string {
	switch {
	case r == nil:
		return "never ran"
	case r.ended.IsZero():
		return fmt.Sprintf("attempt %d killed or lost", r.attempt)
	case r.failed:
		return fmt.Sprintf("attempt %d failed", r.attempt)
	}
	return fmt.Sprintf("attempt %d succeeded", r.attempt)
}

func (f stageFigures) print(row func(string, any)) {
	if f.Tickets == 0 {
		return
	}
	row("staged tickets ("+strings.Join(f.Stages, " → ")+"): fed / Done / Failed", fmt.Sprintf("%d / %d / %d", f.Tickets, f.Done, f.Fail))
	row("  stage runs", f.Runs)
	row("  stage re-run after a kill / after a failure / after success", fmt.Sprintf("%d / %d / %d", f.RerunKilled, f.RerunFailed, f.RerunSucceeded))
	if f.RerunRejected > 0 {
		row("  stage re-run after a rejection of the gate after it", f.RerunRejected)
	}
	row("  kills between a stage's end and the next: stage re-run / went on", fmt.Sprintf("%d: %d / %d", f.WindowKills, f.WindowRerun, f.WindowOn))
	row("  stage runs without the previous stage's result", f.NoResult)
	row("  Failed after a stage (not the last) succeeded: by a person / attempts spent / neither", fmt.Sprintf("%d / %d / %d", f.FailedByDecision, f.FailedRunsLost, len(f.FailedAfterSuccess)))
	row("  stage order problems (skipped, early, back, Done unsucceeded)", len(f.Problems))
}

// parkedStates are the states in which a ticket rests without a run and
// is neither ended nor lost at the end of a run: a ticket awaiting
// approval holds no slot and waits for a person. With the approver on,
// every parking is decided, so a ticket parked at the end is judged by
// the approver's figures (a lost approval), not here.
var parkedStates = []lifecycle.State{lifecycle.AwaitingApproval}

// atRest reports whether labels ls show a ticket that needs nothing more:
// Done, Failed or parked.
func atRest(ls []string) bool {
	if has(ls, lifecycle.Done) || has(ls, lifecycle.Failed) {
		return true
	}
	for _, s := range parkedStates {
		if has(ls, s) {
			return true
		}
	}
	return false
}
