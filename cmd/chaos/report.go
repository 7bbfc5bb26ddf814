package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// Report is the figures of one chaos run.
type Report struct {
	Fed, Done, Failed, Lost int
	// Overlapping counts pairs of runs of one ticket that worked at the same
	// time: one logged a start, tick or end line while the other was
	// working, between its first and last such line and not held stopped
	// by the harness (workedDuring). A run frozen with its replica thus
	// overlaps only if it works again while its successor runs; the "term"
	// line of its SIGTERM handler, when its replica kills it on waking, is
	// not work. Its work within thawBound after the thaw, or once its
	// successor has ended, is Paused's, not overlap.
	Overlapping int
	// BeyondAttempts counts runs past max_attempts, summed over tickets.
	BeyondAttempts int
	// StaleWrites lists label writes by an incarnation that did not own the
	// ticket's run at that moment (see staleWrites).
	StaleWrites []string
	// Recovery: from a replica's kill -9 to each of its running tickets
	// starting again elsewhere.
	RecoveryWorst, RecoveryMedian time.Duration
	RecoveryN, NotRerun           int
	// Wipe: from Redis answering again (empty) to every Enqueued ticket
	// queued again.
	WipeEnqueued, WipeMissing int
	WipeWorst                 time.Duration
	Wiped                     bool
	// Rolling restart: every replica SIGTERMed and replaced in turn.
	RollingRestarts      int
	RollingExitWorst     time.Duration // SIGTERM → exited
	HandBackWorst        time.Duration // a run stopped by shutdown → running again
	HandBackN, HandLost  int           // runs stopped by shutdown: re-run / never re-run
	APICalls, Deliveries int
	// SecretLeaks counts replica log lines that contain the configured
	// token or webhook secret.
	SecretLeaks    int
	Rollback       rollbackFigures // Redis restored from an old snapshot; AOF crash
	Skew, SkewSeen time.Duration   // replica clocks apart (skew.go)
	Failover       failoverFigures // -cluster: a master killed, a replica promoted
	// StaleHistory is every write of the tickets with a stale write, so a
	// reader can tell a daemon bug from a gap in the analysis.
	StaleHistory []string
	// Partitions are the network partitions' rows (partition.go).
	Partitions   []*partition
	Kills, Stops int
	// Soak: the samples and the slope test's verdicts (soak.go), when sampled.
	Soak       *soakFigures
	Runs       int
	OverlapIDs []string
	Elapsed    time.Duration
	// Frozen: one daemon SIGSTOPped alone, its pipelines left running.
	Frozen frozenFigures
	// Paused: the runs frozen together with their replica (world.freeze).
	Paused pausedFigures
	// Settle: the tickets open at the settle deadline, slow or lost
	// (settle.go); Lost counts its lost ones.
	Settle settleFigures
	// Parked counts the tickets resting without a run at the end, neither
	// ended nor lost (parkedStates).
	Parked int
	// Stages judges the staged tickets (stages.go).
	Stages stageFigures
	// Approvals are the approver's figures (approver.go).
	Approvals approvalFigures
}

// OK is the exit criterion: nothing lost, no overlapping runs, no stale write.
func (r *Report) OK() bool {
	for _, p := range r.Partitions {
		if len(p.Problems) > 0 {
			return false
		}
	}
	return r.Lost == 0 && r.Overlapping == 0 && len(r.StaleWrites) == 0 && r.SecretLeaks == 0 && len(r.Rollback.rerun) == 0 && r.Frozen.ok() && r.Soak.ok() &&
		r.Stages.ok() && len(r.Approvals.LostApprovals) == 0
}

// secretLeaks scans every replica log in dir for the configured secrets.
func secretLeaks(dir string) int {
	logs, _ := filepath.Glob(filepath.Join(dir, "r*.log"))
	n := 0
	for _, path := range logs {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, chaosSecret) || strings.Contains(line, chaosToken) {
				n++
			}
		}
	}
	return n
}

type run struct {
	id      string
	attempt int
	// inc is the replica incarnation that ran it ($AGENTSMITH_INSTANCE:
	// each incarnation's instance_id) and key the run's own key (runKey),
	// unique per run: in the run's sandbox pids are its PID namespace's,
	// alike across runs, and the daemon's is not visible.
	inc, key   string
	start, end time.Time // end: the last line
	// work is the time of every line written while the pipeline worked
	// (start, tick, end): a "term" line is its SIGTERM handler running.
	work []time.Time
	// ended is the time of the "end" or "fail" line: the pipeline finished
	// by itself; failed says it exited 1 ("fail").
	ended  time.Time
	failed bool
	// stage is the run's stage ("" without stages) and prev the stage
	// whose result it was handed ("" for none).
	stage, prev string
}

// readRuns parses the pipelines' run log.
func readRuns(path string) []*run {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	byKey := map[string]*run{}
	var out []*run
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 6 && len(fs) != 8 {
			continue
		}
		att, _ := strconv.Atoi(fs[2])
		inc, key := fs[3], fs[4]
		sec, err := strconv.ParseFloat(fs[5], 64)
		if err != nil {
			continue
		}
		at := time.Unix(0, int64(sec*1e9))
		r := byKey[key]
		if fs[0] == "start" || r == nil || r.id != fs[1] {
			r = &run{id: fs[1], attempt: att, inc: inc, key: key, start: at}
			if len(fs) == 8 {
				r.stage, r.prev = strings.Trim(fs[6], "-"), strings.Trim(fs[7], "-")
			}
			byKey[key] = r
			out = append(out, r)
		}
		r.end = at
		if fs[0] != "term" {
			r.work = append(r.work, at)
		}
		if fs[0] == "end" || fs[0] == "fail" {
			r.ended, r.failed = at, fs[0] == "fail"
		}
	}
	return out
}

// workedDuring reports whether a logged work while b was working: between
// b's start and its last work line, and not held stopped by one of the
// harness's freezes fz. A run frozen with its replica logs nothing while
// frozen, and its successor's lines during the freeze do not meet a
// working run; work after the thaw while the successor runs does, unless
// bounded and it lies within thawBound of the thaw.
func workedDuring(a, b *run, fz []freezeSpan, bounded bool) bool {
	if len(b.work) == 0 {
		return false
	}
	last := b.work[len(b.work)-1]
	for _, t := range a.work {
		if t.After(b.start) && t.Before(last) && !heldStopped(fz, b, t) && !(bounded && thawing(fz, a, t)) {
			return true
		}
	}
	return false
}

// overlaps lists the pairs of one ticket's runs rs (sorted by start) that
// worked at the same time, earlier run first.
func overlaps(rs []*run, fz []freezeSpan) [][2]*run {
	var out [][2]*run
	for i := 1; i < len(rs); i++ {
		for j := 0; j < i; j++ {
			if workedDuring(rs[i], rs[j], fz, true) || workedDuring(rs[j], rs[i], fz, true) {
				out = append(out, [2]*run{rs[j], rs[i]})
			}
		}
	}
	return out
}

func startsAfter(path string, t time.Time) map[string]bool {
	out := map[string]bool{}
	for _, r := range readRuns(path) {
		if r.start.After(t) {
			out[r.id] = true
		}
	}
	return out
}

// daemonLabels are the lifecycle labels the chaos replicas write: the daemon's
// default prefix, read as the daemon reads them.
var daemonLabels = lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}

// has reports whether ls carries the label of state s.
func has(ls []string, s lifecycle.State) bool { return slices.Contains(ls, daemonLabels.Label(s)) }

// stateOf is the state labels show, as the daemon reads them: of several
// lifecycle labels the furthest wins.
func stateOf(ls []string) lifecycle.State { return daemonLabels.StateOf(ls) }

func analyse(w *world, tickets []*ticket, wipe wipeFigures, rolling rollingFigures, parts []*partition) *Report {
	rep := &Report{Fed: len(tickets), Wiped: wipe.happened,
		WipeEnqueued: wipe.enqueued, WipeWorst: wipe.worst, WipeMissing: wipe.missing,
		RollingRestarts: rolling.restarts, RollingExitWorst: rolling.exitWorst}
	states := map[string][]string{}
	lastComment := map[string]string{}
	for _, is := range w.sim.Issues() {
		states[ticketID(is)] = is.Labels
		if n := len(is.Comments); n > 0 {
			lastComment[ticketID(is)] = is.Comments[n-1].Body
		}
	}
	for _, t := range tickets {
		switch ls := states[t.id]; {
		case has(ls, lifecycle.Done):
			rep.Done++
		case has(ls, lifecycle.Failed):
			rep.Failed++
		case atRest(ls):
			rep.Parked++
		default:
			rep.Lost++
		}
	}
	runs := readRuns(w.runLog)
	rep.Runs = len(runs)
	overlapBy := map[string]int{}
	byTicket := map[string][]*run{}
	for _, r := range runs {
		byTicket[r.id] = append(byTicket[r.id], r)
	}
	w.mu.Lock()
	freezes := slices.Clone(w.freezes)
	w.mu.Unlock()
	decided := w.approver.byTicket()
	for id, rs := range byTicket {
		sort.Slice(rs, func(i, j int) bool { return rs[i].start.Before(rs[j].start) })
		for _, pr := range overlaps(rs, freezes) {
			a, b := pr[0], pr[1]
			rep.Overlapping++
			overlapBy[id]++
			rep.OverlapIDs = append(rep.OverlapIDs, fmt.Sprintf("%s a%d(%s run %s %s..%s) a%d(%s run %s from %s)", id,
				a.attempt, a.inc, a.key, a.start.Format("15:04:05.000"), a.end.Format("15:04:05.000"),
				b.attempt, b.inc, b.key, b.start.Format("15:04:05.000")))
		}
		// Attempts count per stage ("" without stages).
		perStage := map[string]int{}
		for _, r := range rs {
			perStage[r.stage]++
		}
		// A rejection starts the stage before the gate over.
		var rejected int
		if d := decided[id]; d != nil {
			rejected = len(d.rejections)
		}
		for _, n := range perStage {
			rep.BeyondAttempts += max(n-maxAttempts*(1+rejected), 0)
		}
	}
	done, failed := map[string]bool{}, map[string]bool{}
	for id, ls := range states {
		done[id], failed[id] = has(ls, lifecycle.Done), has(ls, lifecycle.Failed)
	}
	w.mu.Lock()
	stageKills := slices.Clone(w.stageKills)
	w.mu.Unlock()
	shows := map[string]string{}
	for _, t := range tickets {
		shows[t.id] = lifecycle.Labels{Prefix: daemonLabels.Prefix, Stages: t.p.stages}.StageOf(states[t.id])
	}
	rep.Stages = judgeStages(tickets, byTicket, done, failed, stageKills, decided, shows)
	// The ticket's last comment (the daemon's, saying why it failed) goes
	// with each ticket the judge fails for it.
	for i, l := range rep.Stages.FailedAfterSuccess {
		id, _, _ := strings.Cut(l, ": ")
		if c := []rune(strings.Join(strings.Fields(lastComment[id]), " ")); len(c) > 0 {
			rep.Stages.FailedAfterSuccess[i] += "; last comment: " + string(c[:min(len(c), 400)])
		}
	}
	rep.Approvals = w.approver.figures(states)
	rep.Paused = measurePaused(freezes, byTicket)
	w.mu.Lock()
	events := slices.Clone(w.events)
	w.mu.Unlock()
	// Recovery after kill -9: the tickets the killed incarnation was running.
	var recov []time.Duration
	for _, e := range events {
		if e.Kind != "kill" {
			continue
		}
		rep.Kills++
		for _, r := range runs {
			// Its runs still working at the kill: started, not finished,
			// and logging (a tick every 100 ms) until shortly before.
			finished := !r.ended.IsZero() && r.ended.Before(e.At)
			if r.inc != e.Inc || r.start.After(e.At) || finished || r.end.Before(e.At.Add(-500*time.Millisecond)) {
				continue
			}
			var next time.Time
			for _, o := range byTicket[r.id] {
				if o.start.After(e.At) {
					next = o.start
					break
				}
			}
			if next.IsZero() {
				rep.NotRerun++
				continue
			}
			recov = append(recov, next.Sub(e.At))
		}
	}
	// Rolling restart: a run a SIGTERMed incarnation could not finish in
	// its grace is handed back (its in-progress → enqueued write, in the
	// sim's log); each must start again elsewhere.
	termed := map[string]bool{}
	for _, e := range events {
		if e.Kind == "term" {
			termed[e.Inc] = true
		}
	}
	for _, wr := range w.sim.Writes() {
		if !termed[wr.Writer] || !has(wr.Before, lifecycle.InProgress) || !has(wr.After, lifecycle.Enqueued) {
			continue
		}
		id := ticketID(trackersim.Issue{Repo: wr.Repo, Number: wr.Number})
		var next time.Time
		for _, o := range byTicket[id] {
			if o.start.After(wr.At) {
				next = o.start
				break
			}
		}
		if next.IsZero() {
			rep.HandLost++
			continue
		}
		rep.HandBackN++
		rep.HandBackWorst = max(rep.HandBackWorst, next.Sub(wr.At))
	}
	for _, e := range events {
		if e.Kind == "stop" {
			rep.Stops++
		}
	}
	if len(recov) > 0 {
		slices.Sort(recov)
		rep.RecoveryN = len(recov)
		rep.RecoveryWorst = recov[len(recov)-1]
		rep.RecoveryMedian = recov[len(recov)/2]
	}
	rep.StaleWrites = append(unnamedWrites(w.sim.Writes(), events), staleWrites(w.sim.Writes(), events, readRuns(w.runLog))...)
	w.mu.Lock()
	rep.StaleWrites = append(rep.StaleWrites, w.lateWrites...)
	w.mu.Unlock()
	rep.StaleHistory = staleHistory(w.sim.Writes(), rep.StaleWrites)
	rep.Partitions = parts
	for _, p := range parts {
		for _, t := range p.tickets {
			if ls := states[t.id]; !has(ls, lifecycle.Done) && !has(ls, lifecycle.Failed) {
				p.Lost++
			}
			p.Overlapping += overlapBy[t.id]
			key := fmt.Sprintf("%s#%d", t.p.Repo, t.n)
			for _, s := range rep.StaleWrites {
				if f := strings.Fields(s); len(f) > 1 && f[1] == key {
					p.Stale++
				}
			}
		}
	}
	st := w.sim.Stats()
	for _, n := range st.Calls {
		rep.APICalls += n
	}
	rep.Deliveries = st.Deliveries
	rep.SecretLeaks = secretLeaks(w.dir)
	return rep
}

// unnamedWrites lists writes by the daemon that name no incarnation: the
// sim names a writer by the X-Agentsmith-Writer header, which replicas send
// only with trackersim_writer_header, and without it every write would
// look like one writer's and staleWrites could find nothing. Such a write
// cannot be shown not to be stale, so it counts as one.
func unnamedWrites(ws []trackersim.Write, events []event) []string {
	started := map[string]bool{}
	for _, e := range events {
		if e.Kind == "start" {
			started[e.Inc] = true
		}
	}
	var out []string
	for _, wr := range ws {
		if wr.Writer != "human" && !started[wr.Writer] {
			out = append(out, fmt.Sprintf("%s %s#%d by %q: no incarnation of that name (is trackersim_writer_header on?)",
				wr.At.Format("15:04:05.000"), wr.Repo, wr.Number, wr.Writer))
		}
	}
	return out
}

// staleWrites finds label writes made by an incarnation that no longer
// owned the ticket's run. The sim records each write's writer (the
// X-Agentsmith-Writer header: the instance_id, unique per incarnation here;
// see unnamedWrites) and time. States are read as the daemon reads them (the furthest
// lifecycle label wins), because a GitHub transition is two writes (add
// the new label, then remove the old): the first one moves the state, the
// second only tidies. The owner of a run is the incarnation whose write
// moved the ticket into in-progress. A write is stale when
//   - its writer had been killed more than inFlight before the sim applied
//     it (a request sent just before the kill lands a little later, more
//     so with injected latency; later than that means a replayed write), or
//   - it ends a run (in-progress → done or enqueued, the executor's own
//     transitions) and its writer is not the run's owner, or
//   - its writer ends a run (→ done/failed) it owned after the ticket left
//     in-progress without it (a revert or a newer run happened meanwhile).
//
// Housekeeping's reverts (in-progress → pending, also when a leftover
// enqueued label makes the revert's middle read enqueued), give-ups (→ failed) and
// label repairs (a leftover label removed, the state unchanged) by another
// incarnation are the repair, not stale writes; so is another incarnation
// ending a run (→ done) whose pipeline, run by the owner, ended by itself
// before the write: its outcome, recorded in Redis, written by the
// OutcomeWriter after the owner handed it over or died (runs is the run
// log, read to tell).
// inFlight bounds how long a write the sim applies may have been sent
// before: the largest injected latency (300 ms) and some scheduling slack.
const inFlight = time.Second

func staleWrites(ws []trackersim.Write, events []event, runs []*run) []string {
	killed := map[string]time.Time{}
	for _, e := range events {
		if e.Kind == "kill" {
			killed[e.Inc] = e.At
		}
	}
	// recorded: the owner's last run of the ticket ended by itself before
	// at, so its outcome was recorded and may be written by another.
	recorded := func(owner string, wr trackersim.Write) bool {
		id := ticketID(trackersim.Issue{Repo: wr.Repo, Number: wr.Number})
		var last *run
		for _, r := range runs {
			if r.id == id && r.start.Before(wr.At) && (last == nil || r.start.After(last.start)) {
				last = r
			}
		}
		return last != nil && owner != "" && last.inc == owner && !last.ended.IsZero() && last.ended.Before(wr.At)
	}
	owner := map[string]string{}   // ticket → incarnation that moved it into in-progress
	ownerLost := map[string]bool{} // the owner's run was ended by someone else
	var out []string
	for _, wr := range ws {
		key := fmt.Sprintf("%s#%d", wr.Repo, wr.Number)
		desc := func(why string) string {
			return fmt.Sprintf("%s %s by %s: %v → %v (%s)", wr.At.Format("15:04:05.000"), key, wr.Writer, lc(wr.Before), lc(wr.After), why)
		}
		if wr.Writer == "human" {
			continue
		}
		if k, ok := killed[wr.Writer]; ok && wr.At.After(k.Add(inFlight)) {
			out = append(out, desc("writer was killed at "+k.Format("15:04:05.000")))
			continue
		}
		from, to := stateOf(wr.Before), stateOf(wr.After)
		switch {
		case from != lifecycle.InProgress && to == lifecycle.InProgress:
			owner[key], ownerLost[key] = wr.Writer, false
		case from == lifecycle.InProgress && to == lifecycle.InProgress && has(wr.Before, lifecycle.Enqueued) &&
			!has(wr.After, lifecycle.Enqueued):
			// The second half of Enqueued → InProgress (GitHub: add
			// in-progress, then remove enqueued). A replica whose first
			// half landed and whose second failed gives the request back;
			// the replica that completes the move takes the run.
			owner[key], ownerLost[key] = wr.Writer, false
		case from == lifecycle.InProgress && to != lifecycle.InProgress:
			// A revert to pending (StaleJobDetector) over a ticket that
			// still carries the enqueued label of a half-done move to the
			// next stage (GitHub: enqueued added, in-progress not yet
			// removed, when the owner died) reads Enqueued once it removes
			// in-progress: the revert, not a run's end.
			revert := has(wr.After, lifecycle.Pending) && !has(wr.Before, lifecycle.Done)
			ends := to == lifecycle.Done || to == lifecycle.Enqueued && !revert
			if wr.Writer != owner[key] {
				if ends && !(to == lifecycle.Done && recorded(owner[key], wr)) {
					out = append(out, desc("run owned by "+owner[key]))
				}
				ownerLost[key] = true
			}
		case from != to && (to == lifecycle.Done || to == lifecycle.Failed) && wr.Writer == owner[key] && ownerLost[key]:
			out = append(out, desc("its run was ended by another replica"))
		}
	}
	return out
}

// lc lists the states of the lifecycle labels in ls, for a reader.
func lc(ls []string) []string {
	var out []string
	for _, l := range daemonLabels.Lifecycle(ls) {
		out = append(out, stateOf([]string{l}).String())
	}
	return out
}

// Print writes the table.
func (r *Report) Print(w io.Writer) {
	row := func(k string, v any) { fmt.Fprintf(w, "| %-66s | %-28v |\n", k, v) }
	fmt.Fprintf(w, "| %-66s | %-28s |\n|%s|%s|\n", "figure", "value", strings.Repeat("-", 68), strings.Repeat("-", 30))
	row("tickets fed", r.Fed)
	row("reached Done", r.Done)
	row("reached Failed", r.Failed)
	row(fmt.Sprintf("lost (not terminal %s after the settle deadline)", r.Settle.Grace), r.Lost)
	worst := time.Duration(0)
	for _, l := range r.Settle.Slow {
		worst = max(worst, l.Late)
	}
	row("slow (ended after the settle deadline): tickets / worst", fmt.Sprintf("%d / +%s", len(r.Settle.Slow), worst.Round(100*time.Millisecond)))
	if r.Parked > 0 {
		row("parked (resting without a run) at the end", r.Parked)
	}
	row("overlapping runs of one ticket", r.Overlapping)
	row("runs beyond max_attempts (3; per stage)", r.BeyondAttempts)
	row("stale writes", len(r.StaleWrites))
	row("pipeline runs", r.Runs)
	r.Stages.print(row)
	r.Approvals.print(row)
	row("replica kills (kill -9) / leader SIGSTOPs", fmt.Sprintf("%d / %d", r.Kills, r.Stops))
	r.Paused.print(row)
	row("replica death → its tickets running again: worst", r.RecoveryWorst.Round(10*time.Millisecond))
	row("replica death → its tickets running again: median", r.RecoveryMedian.Round(10*time.Millisecond))
	row("  (killed runs re-run / not re-run: attempts exhausted)", fmt.Sprintf("%d / %d", r.RecoveryN, r.NotRerun))
	if r.Wiped {
		row("Redis wipe → every Enqueued ticket queued again: worst", r.WipeWorst.Round(10*time.Millisecond))
		row("  (Enqueued when Redis died / never queued again)", fmt.Sprintf("%d / %d", r.WipeEnqueued, r.WipeMissing))
	} else {
		row("Redis wipe → every Enqueued ticket queued again: worst", "no wipe")
	}
	r.Rollback.print(row)
	printSkew(row, r.Skew, r.SkewSeen)
	r.Failover.print(row)
	if r.RollingRestarts > 0 {
		row("rolling restart (SIGTERM, replace, next): replicas", r.RollingRestarts)
		row("  SIGTERM → replica exited: worst", r.RollingExitWorst.Round(10*time.Millisecond))
		row("  runs handed back → running again: worst", r.HandBackWorst.Round(10*time.Millisecond))
		row("  (runs handed back: re-run / not re-run)", fmt.Sprintf("%d / %d", r.HandBackN, r.HandLost))
	}
	if r.Fed > 0 {
		row("tracker API calls per ticket", fmt.Sprintf("%.1f (%d calls)", float64(r.APICalls)/float64(r.Fed), r.APICalls))
	}
	r.Frozen.print(row)
	row("webhook deliveries sent (duplicates included)", r.Deliveries)
	for _, p := range r.Partitions {
		row("partition: "+p.Name, fmt.Sprintf("lost %d, overlap %d, stale %d", p.Lost, p.Overlapping, p.Stale))
		for _, f := range p.Figures {
			row("  "+f[0], f[1])
		}
	}
	row("replica log lines containing the token or webhook secret", r.SecretLeaks)
	row("elapsed", r.Elapsed.Round(time.Second))
	r.Soak.print(w)
	for _, l := range r.Settle.Slow {
		fmt.Fprintln(w, "slow:", l)
	}
	for _, l := range r.Settle.Lost {
		fmt.Fprintln(w, "lost:", l)
		for _, d := range l.Diag {
			fmt.Fprintln(w, "  ", d)
		}
	}
	for _, s := range r.OverlapIDs {
		fmt.Fprintln(w, "overlap:", s)
	}
	for _, s := range r.Stages.Problems {
		fmt.Fprintln(w, "stage:", s)
	}
	for _, s := range r.Stages.FailedAfterSuccess {
		fmt.Fprintln(w, "stage:", s)
	}
	for _, s := range r.Approvals.LostApprovals {
		fmt.Fprintln(w, "lost approval:", s)
	}
	for _, s := range r.StaleWrites {
		fmt.Fprintln(w, "stale write:", s)
	}
	for _, s := range r.Rollback.rerun {
		fmt.Fprintln(w, "ended ticket ran again after the rollback:", s)
	}
	for _, s := range r.StaleHistory {
		fmt.Fprintln(w, "  history:", s)
	}
	for _, p := range r.Partitions {
		for _, s := range p.Problems {
			fmt.Fprintf(w, "partition %q: %s\n", p.Name, s)
		}
	}
}

// staleHistory lists every write of each ticket a stale write names.
func staleHistory(ws []trackersim.Write, stale []string) []string {
	keys := map[string]bool{}
	for _, s := range stale {
		if f := strings.Fields(s); len(f) > 1 {
			keys[f[1]] = true
		}
	}
	var out []string
	for _, wr := range ws {
		if key := fmt.Sprintf("%s#%d", wr.Repo, wr.Number); keys[key] {
			out = append(out, fmt.Sprintf("%s %s by %s: %v → %v", wr.At.Format("15:04:05.000"), key, wr.Writer, lc(wr.Before), lc(wr.After)))
		}
	}
	return out
}
