package main

import (
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
	log := strings.NewReplacer("ID", id).Replace(`start ID 1 100 101 10.0 plan -
tick ID 1 100 101 10.1 plan -
start ID 2 200 201 13.0 plan -
end ID 2 200 201 13.5 plan -
start ID 1 200 202 14.0 implement plan
end ID 1 200 202 14.5 implement plan
start ID 2 300 301 18.0 implement plan
fail ID 2 300 301 18.5 implement plan
start ID 3 300 302 19.0 implement plan
end ID 3 300 302 19.5 implement plan
start ID 1 300 303 20.0 test implement
end ID 1 300 303 20.5 test implement
`)
	kills := []stageKill{{at: time.Unix(14, 600e6), id: id, stage: "implement"}}
	f := judgeStages([]*ticket{tk}, runsOf(t, log), map[string]bool{id: true}, nil, kills)
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
		{"a stage skipped", `start ID 1 100 101 10.0 plan -
end ID 1 100 101 10.5 plan -
start ID 1 100 102 11.0 test plan
end ID 1 100 102 11.5 test plan
`, "stage test started at"},
		{"two stages overlapping", `start ID 1 100 101 10.0 plan -
tick ID 1 100 101 10.1 plan -
start ID 1 200 201 10.2 implement plan
tick ID 1 100 101 10.3 plan -
end ID 1 100 101 10.4 plan -
end ID 1 200 201 10.5 implement plan
start ID 1 200 202 11.0 test implement
end ID 1 200 202 11.5 test implement
`, "before stage plan succeeded"},
		{"the next stage after a failed run", `start ID 1 100 101 10.0 plan -
fail ID 1 100 101 10.5 plan -
start ID 1 100 102 11.0 implement plan
end ID 1 100 102 11.5 implement plan
start ID 1 100 103 12.0 test implement
end ID 1 100 103 12.5 test implement
`, "before stage plan succeeded"},
		{"back to an earlier stage", `start ID 1 100 101 10.0 plan -
end ID 1 100 101 10.5 plan -
start ID 1 100 102 11.0 implement plan
end ID 1 100 102 11.5 implement plan
start ID 2 100 103 12.0 plan -
end ID 2 100 103 12.5 plan -
start ID 1 100 104 13.0 test implement
end ID 1 100 104 13.5 test implement
`, "stage plan ran at"},
		{"Done with the last stage never run", `start ID 1 100 101 10.0 plan -
end ID 1 100 101 10.5 plan -
start ID 1 100 102 11.0 implement plan
end ID 1 100 102 11.5 implement plan
`, "the last run of stage test did not succeed (never ran)"},
		{"Done after the last run of a stage was killed", `start ID 1 100 101 10.0 plan -
end ID 1 100 101 10.5 plan -
start ID 1 100 102 11.0 implement plan
end ID 1 100 102 11.5 implement plan
start ID 1 100 103 12.0 test implement
end ID 1 100 103 12.5 test implement
start ID 2 200 201 13.0 test implement
tick ID 2 200 201 13.1 test implement
`, "the last run of stage test did not succeed (attempt 2 killed or lost)"},
		{"another stage's result handed over", `start ID 1 100 101 10.0 plan -
end ID 1 100 101 10.5 plan -
start ID 1 100 102 11.0 implement plan
end ID 1 100 102 11.5 implement plan
start ID 1 100 103 12.0 test plan
end ID 1 100 103 12.5 test plan
`, "stage test was handed stage plan's result, not stage implement's"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk := stagedTicket(2)
			runs := runsOf(t, strings.ReplaceAll(c.log, "ID", tk.id))
			f := judgeStages([]*ticket{tk}, runs, map[string]bool{tk.id: true}, nil, nil)
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
	runs := runsOf(t, strings.ReplaceAll(`start ID 1 100 101 10.0 plan -
tick ID 1 100 101 10.1 plan -
start ID 1 200 201 10.2 implement plan
tick ID 1 200 201 10.3 implement plan
tick ID 1 100 101 10.4 plan -
end ID 1 100 101 10.5 plan -
end ID 1 200 201 10.6 implement plan
`, "ID", tk.id))
	if got := len(overlaps(runs[tk.id], nil)); got != 1 {
		t.Errorf("overlapping pairs = %d, want 1 (plan and implement at once)", got)
	}
}

// A run log line without stage fields (a project without stages, or an
// older log) reads as a run without a stage, and attempts count per stage.
func TestReadRunsStageFields(t *testing.T) {
	runs := runsOf(t, `start A#1 1 100 101 10.0
end A#1 1 100 101 10.5
start B#1 1 100 102 11.0 implement plan
fail B#1 1 100 102 11.5 implement plan
`)
	a, b := runs["A#1"][0], runs["B#1"][0]
	if a.stage != "" || a.prev != "" || a.ended.IsZero() || a.failed {
		t.Errorf("run without stage fields read as %+v", a)
	}
	if b.stage != "implement" || b.prev != "plan" || b.ended.IsZero() || !b.failed {
		t.Errorf("staged failed run read as %+v", b)
	}
}

// A parked ticket rests: not lost at the end of a run. Done and Failed
// rest; Enqueued and InProgress (of any stage) do not.
func TestAtRest(t *testing.T) {
	lb := func(s lifecycle.State) []string { return []string{daemonLabels.Label(s), "agent-smith:stage/plan"} }
	for s, want := range map[lifecycle.State]bool{lifecycle.Done: true, lifecycle.Failed: true, lifecycle.Enqueued: false, lifecycle.InProgress: false} {
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
// is listed: its next stage never ran.
func TestJudgeStagesListsFailedAfterASuccess(t *testing.T) {
	tk, ok := stagedTicket(4), stagedTicket(5)
	log := strings.NewReplacer("T4", tk.id, "T5", ok.id).Replace(`start T4 1 100 101 10.0 plan -
end T4 1 100 101 10.5 plan -
start T4 3 100 102 11.0 implement plan
end T4 3 100 102 11.5 implement plan
start T5 1 100 103 10.0 plan -
fail T5 1 100 103 10.5 plan -
`)
	f := judgeStages([]*ticket{tk, ok}, runsOf(t, log), nil, map[string]bool{tk.id: true, ok.id: true}, nil)
	if len(f.FailedAfterSuccess) != 1 || !strings.Contains(f.FailedAfterSuccess[0], tk.id+": Failed after stage implement succeeded (attempt 3)") {
		t.Errorf("failed after a success: %q, want only %s's", f.FailedAfterSuccess, tk.id)
	}
	if !f.ok() || f.Fail != 2 {
		t.Errorf("problems %q, failed %d: a Failed ticket is no order problem", f.Problems, f.Fail)
	}
}
