package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// stagedTicket is ticket n of a GitHub project staged plan → implement →
// test, as useStages builds it.
func stagedTicket(n int) *ticket {
	p := baseProjects[0]
	p.Case = p.Case.WithRepo(stagedRepos[p.Case.Name])
	p.stages = []string{"plan", "implement", "test"}
	return &ticket{p: p, n: n, id: p.ID(n)}
}

// runsOf reads a run log written as the pipeline writes it and groups its
// runs by ticket, each sorted by start, as analyse does.
func runsOf(t *testing.T, log string) map[string][]*run {
	t.Helper()
	path := filepath.Join(t.TempDir(), "runs.log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	by := map[string][]*run{}
	for _, r := range readRuns(path) {
		by[r.id] = append(by[r.id], r)
	}
	for _, rs := range by {
		sort.Slice(rs, func(i, j int) bool { return rs[i].start.Before(rs[j].start) })
	}
	return by
}

// A staged ticket killed mid-stage and between a stage's end and the next
// stage's push runs that stage again and goes on: Done, every stage in
// order and its last run succeeded, each re-run counted by what ended the
// run before it, and no problem.
func TestJudgeStagesCountsReRunsAfterKills(t *testing.T) {
	tk := stagedTicket(1)
	id := tk.id
	log := strings.NewReplacer("ID", id).Replace(`start ID 1 r1.1 k101 10.0 plan -
tick ID 1 r1.1 k101 10.1 plan -
start ID 2 r2.1 k201 13.0 plan -
end ID 2 r2.1 k201 13.5 plan -
start ID 1 r2.1 k202 14.0 implement plan
end ID 1 r2.1 k202 14.5 implement plan
start ID 2 r3.1 k301 18.0 implement plan
fail ID 2 r3.1 k301 18.5 implement plan
start ID 3 r3.1 k302 19.0 implement plan
end ID 3 r3.1 k302 19.5 implement plan
start ID 1 r3.1 k303 20.0 test implement
end ID 1 r3.1 k303 20.5 test implement
`)
	kills := []stageKill{{at: time.Unix(14, 600e6), id: id, stage: "implement"}}
	f := judgeStages([]*ticket{tk}, runsOf(t, log), map[string]bool{id: true}, nil, kills, nil, nil)
	if !f.ok() {
		t.Fatalf("problems %q, want none", f.Problems)
	}
	want := stageFigures{Stages: tk.p.stages, Tickets: 1, Done: 1, Runs: 6, RerunKilled: 1, RerunFailed: 1, RerunSucceeded: 1,
		WindowKills: 1, WindowRerun: 1}
	if f.Tickets != want.Tickets || f.Done != want.Done || f.Runs != want.Runs || f.RerunKilled != want.RerunKilled ||
		f.RerunFailed != want.RerunFailed || f.RerunSucceeded != want.RerunSucceeded || f.WindowKills != want.WindowKills ||
		f.WindowRerun != want.WindowRerun || f.WindowOn != 0 || f.NoResult != 0 {
		t.Errorf("figures %+v, want %+v", f, want)
	}
}

// A ticket that runs a stage before the one before it succeeded, skips a
// stage, goes back, or ends Done while a stage's last run failed fails the
// judge; so does a stage handed another stage's result.
func TestJudgeStagesFailsOrderProblems(t *testing.T) {
	for _, c := range []struct{ name, log, want string }{
		{"a stage skipped", `start ID 1 r1.1 k101 10.0 plan -
end ID 1 r1.1 k101 10.5 plan -
start ID 1 r1.1 k102 11.0 test plan
end ID 1 r1.1 k102 11.5 test plan
`, "stage test started at"},
		{"two stages overlapping", `start ID 1 r1.1 k101 10.0 plan -
tick ID 1 r1.1 k101 10.1 plan -
start ID 1 r2.1 k201 10.2 implement plan
tick ID 1 r1.1 k101 10.3 plan -
end ID 1 r1.1 k101 10.4 plan -
end ID 1 r2.1 k201 10.5 implement plan
start ID 1 r2.1 k202 11.0 test implement
end ID 1 r2.1 k202 11.5 test implement
`, "before stage plan succeeded"},
		{"the next stage after a failed run", `start ID 1 r1.1 k101 10.0 plan -
fail ID 1 r1.1 k101 10.5 plan -
start ID 1 r1.1 k102 11.0 implement plan
end ID 1 r1.1 k102 11.5 implement plan
start ID 1 r1.1 k103 12.0 test implement
end ID 1 r1.1 k103 12.5 test implement
`, "before stage plan succeeded"},
		{"back to an earlier stage", `start ID 1 r1.1 k101 10.0 plan -
end ID 1 r1.1 k101 10.5 plan -
start ID 1 r1.1 k102 11.0 implement plan
end ID 1 r1.1 k102 11.5 implement plan
start ID 2 r1.1 k103 12.0 plan -
end ID 2 r1.1 k103 12.5 plan -
start ID 1 r1.1 k104 13.0 test implement
end ID 1 r1.1 k104 13.5 test implement
`, "stage plan ran at"},
		{"Done with the last stage never run", `start ID 1 r1.1 k101 10.0 plan -
end ID 1 r1.1 k101 10.5 plan -
start ID 1 r1.1 k102 11.0 implement plan
end ID 1 r1.1 k102 11.5 implement plan
`, "the last run of stage test did not succeed (never ran)"},
		{"Done after the last run of a stage was killed", `start ID 1 r1.1 k101 10.0 plan -
end ID 1 r1.1 k101 10.5 plan -
start ID 1 r1.1 k102 11.0 implement plan
end ID 1 r1.1 k102 11.5 implement plan
start ID 1 r1.1 k103 12.0 test implement
end ID 1 r1.1 k103 12.5 test implement
start ID 2 r2.1 k201 13.0 test implement
tick ID 2 r2.1 k201 13.1 test implement
`, "the last run of stage test did not succeed (attempt 2 killed or lost)"},
		{"another stage's result handed over", `start ID 1 r1.1 k101 10.0 plan -
end ID 1 r1.1 k101 10.5 plan -
start ID 1 r1.1 k102 11.0 implement plan
end ID 1 r1.1 k102 11.5 implement plan
start ID 1 r1.1 k103 12.0 test plan
end ID 1 r1.1 k103 12.5 test plan
`, "stage test was handed stage plan's result, not stage implement's"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk := stagedTicket(2)
			runs := runsOf(t, strings.ReplaceAll(c.log, "ID", tk.id))
			f := judgeStages([]*ticket{tk}, runs, map[string]bool{tk.id: true}, nil, nil, nil, nil)
			if f.ok() || !strings.Contains(strings.Join(f.Problems, "\n"), c.want) {
				t.Errorf("problems %q, want one containing %q", f.Problems, c.want)
			}
			rep := Report{Stages: f}
			if rep.OK() {
				t.Error("the report passes with a stage problem")
			}
		})
	}
}

// Two stages of one ticket running at once are overlapping runs, whatever
// their stages: a ticket runs one stage at a time.
func TestOverlapAcrossStages(t *testing.T) {
	tk := stagedTicket(3)
	runs := runsOf(t, strings.ReplaceAll(`start ID 1 r1.1 k101 10.0 plan -
tick ID 1 r1.1 k101 10.1 plan -
start ID 1 r2.1 k201 10.2 implement plan
tick ID 1 r2.1 k201 10.3 implement plan
tick ID 1 r1.1 k101 10.4 plan -
end ID 1 r1.1 k101 10.5 plan -
end ID 1 r2.1 k201 10.6 implement plan
`, "ID", tk.id))
	if got := len(overlaps(runs[tk.id], nil)); got != 1 {
		t.Errorf("overlapping pairs = %d, want 1 (plan and implement at once)", got)
	}
}

// A run log line without stage fields (a project without stages, or an
// older log) reads as a run without a stage, and attempts count per stage.
func TestReadRunsStageFields(t *testing.T) {
	runs := runsOf(t, `start A#1 1 r1.1 k101 10.0
end A#1 1 r1.1 k101 10.5
start B#1 1 r1.1 k102 11.0 implement plan
fail B#1 1 r1.1 k102 11.5 implement plan
`)
	a, b := runs["A#1"][0], runs["B#1"][0]
	if a.stage != "" || a.prev != "" || a.ended.IsZero() || a.failed {
		t.Errorf("run without stage fields read as %+v", a)
	}
	if b.stage != "implement" || b.prev != "plan" || b.ended.IsZero() || !b.failed {
		t.Errorf("staged failed run read as %+v", b)
	}
}

// A parked ticket rests: not lost at the end of a run. Done, Failed and
// AwaitingApproval rest; Enqueued and InProgress (of any stage) do not.
func TestAtRest(t *testing.T) {
	lb := func(s lifecycle.State) []string { return []string{daemonLabels.Label(s), "agent-smith:stage/plan"} }
	for s, want := range map[lifecycle.State]bool{lifecycle.Done: true, lifecycle.Failed: true, lifecycle.AwaitingApproval: true,
		lifecycle.Enqueued: false, lifecycle.InProgress: false} {
		if got := atRest(lb(s)); got != want {
			t.Errorf("atRest(%s) = %v, want %v", s, got, want)
		}
	}
	defer func(old []lifecycle.State) { parkedStates = old }(parkedStates)
	parkedStates = []lifecycle.State{lifecycle.Pending}
	if !atRest(lb(lifecycle.Pending)) {
		t.Error("a parked state does not rest")
	}
}

// A ticket that ends Failed right after a stage (not the last) succeeded
// fails the judge when no person failed it (a crash must not do that:
// here the next stage, shown on the ticket, never ran), and is counted
// apart when the approver cancelled it or rejected its gate past
// max_rejections, or when the stage it still shows spent its last attempt
// on a run whose success the daemon never took.
func TestJudgeStagesFailedAfterASuccess(t *testing.T) {
	crashed, ok, cancelled, rejected, spent := stagedTicket(4), stagedTicket(5), gatedTicket(6), gatedTicket(7), stagedTicket(9)
	log := strings.NewReplacer("T4", crashed.id, "T5", ok.id, "T6", cancelled.id, "T7", rejected.id, "T9", spent.id).Replace(`start T9 1 r1.1 k111 10.0 plan -
end T9 1 r1.1 k111 10.5 plan -
start T9 1 r1.1 k112 11.0 implement plan
end T9 1 r1.1 k112 11.5 implement plan
start T9 2 r1.1 k113 12.0 implement plan
end T9 2 r1.1 k113 12.5 implement plan
start T9 3 r1.1 k114 13.0 implement plan
end T9 3 r1.1 k114 13.5 implement plan
start T4 1 r1.1 k101 10.0 plan -
end T4 1 r1.1 k101 10.5 plan -
start T4 3 r1.1 k102 11.0 implement plan
end T4 3 r1.1 k102 11.5 implement plan
start T5 1 r1.1 k103 10.0 plan -
fail T5 1 r1.1 k103 10.5 plan -
start T6 1 r1.1 k104 10.0 plan -
end T6 1 r1.1 k104 10.5 plan -
start T7 1 r1.1 k105 10.0 plan -
end T7 1 r1.1 k105 10.5 plan -
start T7 1 r1.1 k106 12.0 plan -
end T7 1 r1.1 k106 12.5 plan -
start T7 1 r1.1 k107 14.0 plan -
end T7 1 r1.1 k107 14.5 plan -
`)
	failed := map[string]bool{crashed.id: true, ok.id: true, cancelled.id: true, rejected.id: true, spent.id: true}
	shows := map[string]string{crashed.id: "test", ok.id: "plan", cancelled.id: "implement", rejected.id: "implement", spent.id: "implement"}
	decided := map[string]*ticketDecisions{
		cancelled.id: {approvals: []time.Time{unix(11)}, cancels: []time.Time{unix(11.01)}},
		rejected.id:  {rejections: []time.Time{unix(11), unix(13), unix(15)}},
	}
	f := judgeStages([]*ticket{crashed, ok, cancelled, rejected, spent}, runsOf(t, log), nil, failed, nil, decided, shows)
	if len(f.FailedAfterSuccess) != 1 || !strings.Contains(f.FailedAfterSuccess[0], crashed.id+": Failed after stage implement succeeded (attempt 3)") {
		t.Errorf("failed after a success by nothing: %q, want only %s's", f.FailedAfterSuccess, crashed.id)
	}
	if f.FailedByDecision != 2 || f.RerunRejected != 2 || f.FailedRunsLost != 1 {
		t.Errorf("failed by a decision %d, re-runs after a rejection %d, attempts spent %d: want 2, 2 and 1", f.FailedByDecision, f.RerunRejected, f.FailedRunsLost)
	}
	if f.ok() || len(f.Problems) != 0 || f.Fail != 5 {
		t.Errorf("ok %v, problems %q, failed %d: want a failed judge with no order problem", f.ok(), f.Problems, f.Fail)
	}
	if rep := (Report{Stages: f}); rep.OK() {
		t.Error("the report passes a ticket Failed after a success that no person failed")
	}
}

// gatedTicket is ticket n of a GitHub project staged plan → [approval] →
// implement → test, as useStages builds it with -gates implement.
func gatedTicket(n int) *ticket {
	tk := stagedTicket(n)
	tk.p.gates = []string{"implement"}
	return tk
}

func unix(sec float64) time.Time { return time.Unix(0, int64(sec*1e9)) }

// A gated stage runs only after an approval that follows the success of
// the stage before it: an approval before that success, or none, is a
// bypassed gate.
func TestJudgeStagesGatedStageNeedsAnApproval(t *testing.T) {
	const log = `start ID 1 r1.1 k101 10.0 plan -
end ID 1 r1.1 k101 10.5 plan -
start ID 1 r1.1 k102 12.0 implement plan
end ID 1 r1.1 k102 12.5 implement plan
start ID 1 r1.1 k103 13.0 test implement
end ID 1 r1.1 k103 13.5 test implement
`
	for name, c := range map[string]struct {
		approvals []time.Time
		bypassed  bool
	}{
		"approved after the plan":        {[]time.Time{unix(11)}, false},
		"never approved":                 {nil, true},
		"approved before the plan ended": {[]time.Time{unix(10.2)}, true},
	} {
		t.Run(name, func(t *testing.T) {
			tk := gatedTicket(8)
			f := judgeStages([]*ticket{tk}, runsOf(t, strings.ReplaceAll(log, "ID", tk.id)), map[string]bool{tk.id: true}, nil, nil,
				map[string]*ticketDecisions{tk.id: {approvals: c.approvals}}, nil)
			got := strings.Contains(strings.Join(f.Problems, "\n"), "gated stage implement started at")
			if got != c.bypassed || f.ok() == c.bypassed {
				t.Errorf("problems %q: bypass found %v, want %v", f.Problems, got, c.bypassed)
			}
		})
	}
}

// The approver's figures: a ticket parked at the end whose parking it
// decided is a lost approval, and fails the report; one that went on is
// not; a parked ticket waits on a decision, so the settle does not end on it.
func TestApproverLostApprovals(t *testing.T) {
	parked := []string{daemonLabels.Label(lifecycle.AwaitingApproval), "agent-smith:stage/implement"}
	a := newApprover(&world{}, func(int) int { return 0 })
	a.at["A#1"] = &parking{stage: "implement", decided: true, kinds: []string{"approve"}, via: "label"}
	a.at["A#2"] = &parking{stage: "implement", decided: true, kinds: []string{"approve"}, via: "comment"}
	a.decisions = []decision{{id: "A#1", kind: "approve", via: "label"}, {id: "A#2", kind: "approve", via: "comment"},
		{id: "A#2", kind: "approve", via: "comment", reask: true}}
	f := a.figures(map[string][]string{"A#1": parked, "A#2": {daemonLabels.Label(lifecycle.Done)}})
	if len(f.LostApprovals) != 1 || !strings.HasPrefix(f.LostApprovals[0], "A#1: ") || f.ParkedAtEnd != 1 {
		t.Errorf("lost approvals %q, parked %d: want A#1's alone", f.LostApprovals, f.ParkedAtEnd)
	}
	if f.Approvals != 2 || f.Reasks != 1 || f.ByLabel != 1 || f.ByComment != 1 {
		t.Errorf("figures %+v: want 2 approvals (1 by label, 1 by comment) and 1 comment posted again", f)
	}
	if rep := (Report{Approvals: f}); rep.OK() {
		t.Error("the report passes a lost approval")
	}
	if !a.waitsOnDecision(parked) || a.waitsOnDecision([]string{daemonLabels.Label(lifecycle.Failed)}) {
		t.Error("with the approver on, a parked ticket must wait on a decision, a Failed one not")
	}
	var none *approver
	if none.waitsOnDecision(parked) {
		t.Error("without the approver, a parked ticket rests")
	}
}

// TestChaosGatesShort is the staged run with an approval gate cut down to
// under a minute: plan → [approval] → implement → test beside the plain
// projects, the approver deciding every parking (approving, rejecting,
// racing a cancel with its approval), replicas killed -9 at random, after
// a stage's end and while a decision is carried out. Nothing may be lost,
// overlap or be written stale, no approval may be lost, no gate bypassed,
// and no ticket may fail after a success that no person failed.
func TestChaosGatesShort(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of real processes")
	}
	o := Options{Tickets: 24, Duration: 20 * time.Second, Settle: 30 * time.Second, Seed: 3,
		KillEvery: 5 * time.Second, Duplicate: 1, Stages: []string{"plan", "implement", "test"}, Gates: []string{"implement"},
		StageKillEvery: 6 * time.Second, ApprovalKillEvery: 4 * time.Second}
	o.Dir = keptDir(t, "chaos-gates-")
	var log bytes.Buffer
	o.Log = &log
	rep := runLogged(t, o)
	if !rep.OK() {
		t.Errorf("lost %d, overlapping %d, stale writes %d, lost approvals %q, stage problems %q, failed after a success %q: all must be 0\nwork dir kept: %s\n%s",
			rep.Lost, rep.Overlapping, len(rep.StaleWrites), rep.Approvals.LostApprovals, rep.Stages.Problems, rep.Stages.FailedAfterSuccess, o.Dir, log.String())
	}
	if a := rep.Approvals; a.Parkings == 0 || a.Approvals == 0 || rep.Kills == 0 {
		t.Errorf("parkings %d, approvals %d, kills %d: the run proved nothing", a.Parkings, a.Approvals, rep.Kills)
	}
}
