package statuspage

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// A ticket backing off after a tracker's refusal for good is on the page
// (ticket, op, status, since, next try, told) and in the document, read
// from the index Refusals keeps; a ticket id from the tracker is escaped;
// a retry that ends the backoff takes the ticket off.
func TestPageListsTicketsRefusedByTheTracker(t *testing.T) {
	w := lifecycletest.New(t, 3)
	ctx := t.Context()
	p := w.Projects[lifecycletest.Project]
	n := w.RefusedIssue(t)
	told, err := p.Tracker.Get(ctx, lifecycletest.Ref(n))
	if err != nil {
		t.Fatal(err)
	}
	hostile := &platforms.Ticket{Ref: platforms.Ref{Platform: "github", Project: lifecycletest.Project, ID: "acme/app#<b>7</b>"}, Open: true}
	refusal := platforms.Rejected(403, errors.New("403 Resource not accessible by integration"))
	r := w.Claims.Refusals()
	until, ok := r.Refused(ctx, p, told, lifecycle.RefusalOpClaim, lifecycle.OwnerClaimService, lifecycle.SourcePoll, refusal)
	if !ok {
		t.Fatal("a rejected write not taken as refused")
	}
	if _, ok := r.Refused(ctx, p, hostile, lifecycle.RefusalOpRepair, lifecycle.OwnerLabelRepairer, lifecycle.SourceReconcile, refusal); !ok {
		t.Fatal("a rejected write not taken as refused")
	}
	h := New(Config{RDB: w.RDB, Queue: w.Queue, Instance: "replica-a", Token: "s3cret"})
	body := get(t, h, "/status", "Bearer s3cret").Body.String()
	for _, want := range []string{"Refused by the tracker", `<table id="refusals">`, "(2 in all)",
		"github:acme/app#1", ">claim<", ">403<", until.UTC().Format("2006-01-02 15:04") + " UTC", ">yes<",
		"acme/app#&lt;b&gt;7&lt;/b&gt;", ">repair<", ">no<"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, "<b>7") {
		t.Error("a ticket id reached the page unescaped")
	}
	var st Status
	if err := json.Unmarshal(get(t, h, "/status.json", "Bearer s3cret").Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Refusals) != 2 || st.RefusalsTotal != 2 {
		t.Fatalf("refusals = %+v (%d)", st.Refusals, st.RefusalsTotal)
	}
	r.EndBackoff(ctx, told.Ref)
	if err := json.Unmarshal(get(t, h, "/status.json", "Bearer s3cret").Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Refusals) != 1 || st.Refusals[0].Op != lifecycle.RefusalOpRepair {
		t.Errorf("after the backoff ended, refusals = %+v, want the repair's alone", st.Refusals)
	}
}
