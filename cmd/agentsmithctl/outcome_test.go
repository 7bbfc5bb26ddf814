package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/ops"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// A run whose pipeline ended and whose outcome waits for the tracker shows
// as such: in its row of the runs, and in the outcomes waiting with their
// age, tries and last error.
func TestStatusShowsOutcomesWaitingForTheTracker(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	ref := platforms.Ref{Platform: "github", Project: "app", ID: repo + "#7"}
	ended := time.Now().Add(-2 * time.Minute)
	rec := runstate.Record{Ref: ref, Instance: "replica-a", Token: "tok", Attempt: 1, Started: ended.Add(-time.Minute)}
	if took, err := runstate.Take(ctx, w.rdb, rec, runstate.TakeArgs{TTL: time.Minute, Now: time.Now()}); err != nil || took.Result != runstate.Taken {
		t.Fatalf("take: %+v %v", took, err)
	}
	o := runstate.Outcome{Ref: ref, Token: "tok", Instance: "replica-a", Attempt: 1, To: "done", Recorded: ended,
		Tries: 3, LastError: "re-read: dial tcp: connection\trefused\n"}
	if ok, err := runstate.PutOutcome(ctx, w.rdb, "tok", o); err != nil || !ok {
		t.Fatalf("record: %v %v", ok, err)
	}
	// The table is aligned with spaces: compared word by word.
	out := strings.Join(strings.Fields(w.mustCtl("status")), " ")
	for _, want := range []string{"OUTCOME WAITING TO INSTANCE ATTEMPT WAITING SINCE FOR TRIES LAST ERROR",
		"replica-a (gone) 1 ended 2m", "ago, outcome waiting for the tracker",
		"github:" + repo + "#7 done replica-a 1 " + ended.UTC().Format(time.RFC3339) + " 2m",
		"s 3 re-read: dial tcp: connection refused LEASE"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	var snap ops.Snapshot
	if err := json.Unmarshal([]byte(w.mustCtl("status", "-o", "json")), &snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.Outcomes) != 1 || snap.Outcomes[0].To != "done" || snap.Outcomes[0].AgeMS < (2*time.Minute).Milliseconds() {
		t.Errorf("outcomes = %+v, want the one waiting two minutes", snap.Outcomes)
	}
	if len(snap.Runs) != 1 || snap.Runs[0].Ended.Sub(ended).Abs() > time.Millisecond {
		t.Errorf("runs = %+v, want the run marked ended at %s", snap.Runs, ended)
	}
}

// An outcome handed over (its run lock free) that the tracker will never
// take: release deletes the record, the operator's explicit act, so the
// ticket is no longer held and the repairs may revert it.
func TestReleaseDropsAWaitingOutcome(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	ref := platforms.Ref{Platform: "github", Project: "app", ID: repo + "#8"}
	rec := runstate.Record{Ref: ref, Instance: "replica-a", Token: "tok", Attempt: 1}
	if took, err := runstate.Take(ctx, w.rdb, rec, runstate.TakeArgs{TTL: time.Minute, Now: time.Now()}); err != nil || took.Result != runstate.Taken {
		t.Fatalf("take: %+v %v", took, err)
	}
	o := runstate.Outcome{Ref: ref, Token: "tok", Instance: "replica-a", Attempt: 1, To: "failed", Recorded: time.Now()}
	if ok, err := runstate.PutOutcome(ctx, w.rdb, "tok", o); err != nil || !ok {
		t.Fatalf("record: %v %v", ok, err)
	}
	if _, err := runstate.Release(ctx, w.rdb, ref, "tok", false); err != nil {
		t.Fatal(err)
	}
	ticket := "github:" + repo + "#8"
	if code, _, errOut := w.ctl("release", ticket); code != 2 || !strings.Contains(errOut, `waiting outcome "failed"`) {
		t.Errorf("release without --yes: exit %d, stderr %q, want 2 naming the waiting outcome", code, errOut)
	}
	out := w.mustCtl("release", ticket, "--yes")
	if !strings.Contains(out, `waiting outcome "failed"`) {
		t.Errorf("release:\n%s", out)
	}
	if waits, err := runstate.OutcomeWaits(ctx, w.rdb, ref); err != nil || waits {
		t.Errorf("outcome still waits after release: %v %v", waits, err)
	}
}

// requeue of a ticket whose last run's outcome waits (its lock free) says
// so, not that a heartbeat is held.
func TestRequeueNamesAWaitingOutcome(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	n := w.sim.CreateIssue(repo, "outcome waits", "", "agent-smith", lifecycletest.Label(lifecycle.Enqueued))
	ref := platforms.Ref{Platform: "github", Project: "app", ID: fmt.Sprintf("%s#%d", repo, n)}
	rec := runstate.Record{Ref: ref, Instance: "replica-a", Token: "tok", Attempt: 1}
	if took, err := runstate.Take(ctx, w.rdb, rec, runstate.TakeArgs{TTL: time.Minute, Now: time.Now()}); err != nil || took.Result != runstate.Taken {
		t.Fatalf("take: %+v %v", took, err)
	}
	o := runstate.Outcome{Ref: ref, Token: "tok", Instance: "replica-a", Attempt: 1, To: "done", Recorded: time.Now()}
	if ok, err := runstate.PutOutcome(ctx, w.rdb, "tok", o); err != nil || !ok {
		t.Fatalf("record: %v %v", ok, err)
	}
	if _, err := runstate.Release(ctx, w.rdb, ref, "tok", false); err != nil {
		t.Fatal(err)
	}
	_, out, errOut := w.ctl("requeue", "github:"+ref.ID)
	if !strings.Contains(out+errOut, "outcome waits for the tracker") || strings.Contains(out+errOut, "heartbeat held") {
		t.Errorf("requeue:\nstdout: %s\nstderr: %s", out, errOut)
	}
}
