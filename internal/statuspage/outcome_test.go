package statuspage

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
)

// An outcome waiting for the tracker is on the page (its table, its
// ticket's row) and in the document, with its age; a last error from the
// tracker is escaped like every other text.
func TestPageShowsOutcomesWaitingForTheTracker(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	ctx := t.Context()
	recorded := time.Now().Add(-3 * time.Minute).UTC()
	o := runstate.Outcome{Ref: refFor("acme/app#9"), Token: "tok", Instance: "replica-a", Attempt: 2, To: "failed",
		Recorded: recorded, Tries: 4, LastError: "<b>connection refused</b>"}
	rec := runstate.Record{Ref: o.Ref, Instance: "replica-a", Token: "tok", Attempt: 2}
	if took, err := runstate.Take(ctx, rdb, rec, runstate.TakeArgs{TTL: time.Minute, Now: time.Now()}); err != nil || took.Result != runstate.Taken {
		t.Fatalf("take: %+v %v", took, err)
	}
	if ok, err := runstate.PutOutcome(ctx, rdb, "tok", o); err != nil || !ok {
		t.Fatalf("record: %v %v", ok, err)
	}
	h := New(Config{RDB: rdb, Queue: testQueue(rdb), Instance: "replica-a", Token: "s3cret"})
	body := get(t, h, "/status", "Bearer s3cret").Body.String()
	for _, want := range []string{"Outcomes waiting for the tracker", `<table id="outcomes">`,
		"pipeline ended; failed waiting for the tracker since " + recorded.Format("15:04:05"),
		"ended 3 m ", "s ago, outcome waiting for the tracker", recorded.Format("15:04:05") + " UTC (3 m ",
		"&lt;b&gt;connection refused&lt;/b&gt;"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, "<b>connection") {
		t.Error("the last error reached the page unescaped")
	}
	var st Status
	if err := json.Unmarshal(get(t, h, "/status.json", "Bearer s3cret").Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Outcomes) != 1 || st.Outcomes[0].Ticket != "github:acme/app#9" || st.Outcomes[0].Tries != 4 || st.Outcomes[0].AgeMS < 180_000 {
		t.Errorf("outcomes = %+v", st.Outcomes)
	}
}
