package statuspage

import (
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// stageRow is one stage of a staged ticket as its page shows it: how
// often it ran, for how long in all and the last time, and how its last
// run ended (from the audit stream's transitions out of InProgress).
type stageRow struct {
	Stage   string
	Runs    int
	TotalMS int64
	LastMS  int64
	Outcome string
}

// approvalRow is one wait at an approval gate that ended: the gated
// stage, when it ended, how long it lasted, the decision and who made it
// (the ApprovalGate's transitions out of AwaitingApproval).
type approvalRow struct {
	Stage    string
	At       time.Time
	WaitMS   int64
	Decision string
	Actor    string
}

// stagesOf sums events per stage, in the order the stages first ran, and
// lists the approval waits, oldest first.
func stagesOf(events []Event) ([]stageRow, []approvalRow) {
	var stages []stageRow
	at := map[string]int{}
	var waits []approvalRow
	for _, e := range events {
		if e.Kind != lifecycle.EventTransition {
			continue
		}
		switch {
		case e.From == lifecycle.InProgress && e.Stage != "" && e.Run > 0:
			i, ok := at[e.Stage]
			if !ok {
				i = len(stages)
				at[e.Stage] = i
				stages = append(stages, stageRow{Stage: e.Stage})
			}
			r := &stages[i]
			r.Runs++
			r.TotalMS += e.Run.Milliseconds()
			r.LastMS, r.Outcome = e.Run.Milliseconds(), e.Outcome
		case e.From == lifecycle.AwaitingApproval && e.ApprovalWait > 0:
			waits = append(waits, approvalRow{Stage: e.Stage, At: e.At, WaitMS: e.ApprovalWait.Milliseconds(), Decision: e.Outcome, Actor: e.Actor})
		}
	}
	return stages, waits
}
