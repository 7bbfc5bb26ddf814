package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// newGatedWorld is newWorld whose app project runs plan → implement
// (gate: approval, approvers: only dana) → test.
func newGatedWorld(t *testing.T) *world {
	t.Helper()
	w := newWorld(t)
	b, err := os.ReadFile(w.path)
	must(t, err)
	staged := strings.Replace(string(b), `    pipeline: {command: ["true"]}`, `    pipeline:
      command: ["true"]
      stages:
        - {name: plan}
        - name: implement
          gate: {approval: {approvers: {access: none, users: [dana]}, max_rejections: 1}}
        - {name: test}`, 1)
	must(t, os.WriteFile(w.path, []byte(staged), 0o600))
	w.cfg, err = config.Load(w.path)
	must(t, err)
	return w
}

// parked creates a ticket parked before stage implement.
func (w *world) parked() (int, string) {
	n := w.sim.CreateIssue(repo, "Gated", "", "agent-smith", lifecycletest.Label(lifecycle.AwaitingApproval), w.labels.Stage("implement"))
	return n, fmt.Sprintf("github:%s#%d", repo, n)
}

// An operator approves and rejects a parked ticket with agentsmithctl,
// though the gate's approvers name only dana: approve queues the gated
// stage, reject sends the ticket back to plan with the reason as the
// review, the second rejection (past max_rejections 1) fails it; each
// decision is audited with the operator's name. A ticket not parked is
// left alone, and reject without a reason is a usage error.
func TestApproveAndRejectAsOperator(t *testing.T) {
	w := newGatedWorld(t)
	ctx := t.Context()
	op := (&app{}).operator()
	if !strings.HasPrefix(op, "operator:") || !strings.Contains(op, "@") {
		t.Fatalf("operator name %q, want operator:<login>@<host>", op)
	}

	n, ticket := w.parked()
	out := w.mustCtl("approve", ticket)
	if !strings.Contains(out, "approved "+ticket) || !strings.Contains(out, "by "+op) {
		t.Fatalf("approve:\n%s", out)
	}
	is, _ := w.sim.Issue(repo, n)
	if w.labels.StateOf(is.Labels) != lifecycle.Enqueued || !slices.Contains(is.Labels, w.labels.Stage("implement")) {
		t.Errorf("labels after approve %q, want enqueued at stage implement", is.Labels)
	}
	reqs, _ := w.rdb.LRange(ctx, keys.Queue(), 0, -1).Result()
	if len(reqs) != 1 {
		t.Fatalf("queue after approve %q, want the stage's request", reqs)
	}
	if r, err := lifecycle.DecodeRequest([]byte(reqs[0])); err != nil || r.Stage != "implement" || r.Ref.String() != ticket {
		t.Errorf("request after approve %+v %v, want stage implement of %s", r, err, ticket)
	}
	if len(is.Comments) == 0 || !strings.Contains(is.Comments[len(is.Comments)-1].Body, "approved by "+op) {
		t.Errorf("comments after approve %+v, want the reply naming %s", is.Comments, op)
	}
	// Approving again: nothing awaits approval, nothing changes.
	out = w.mustCtl("approve", ticket)
	if !strings.Contains(out, "not approved "+ticket) || !strings.Contains(out, "state is enqueued") {
		t.Errorf("second approve:\n%s", out)
	}
	if l, _ := w.rdb.LLen(ctx, keys.Queue()).Result(); l != 1 {
		t.Errorf("queue length %d after a second approve, want 1", l)
	}

	if code, _, errOut := w.ctl("reject", ticket); code != exitUsage || !strings.Contains(errOut, "--reason") {
		t.Errorf("reject without --reason: exit %d, %s", code, errOut)
	}
	m, other := w.parked()
	out = w.mustCtl("reject", other, "--reason", "split the change in two")
	if !strings.Contains(out, "rejected "+other) {
		t.Fatalf("reject:\n%s", out)
	}
	is, _ = w.sim.Issue(repo, m)
	if w.labels.StateOf(is.Labels) != lifecycle.Enqueued || !slices.Contains(is.Labels, w.labels.Stage("plan")) {
		t.Errorf("labels after reject %q, want enqueued at stage plan", is.Labels)
	}
	if v, _ := w.rdb.Get(ctx, keys.Review(refOf("app", m).Key())).Result(); v != "split the change in two" {
		t.Errorf("review after reject %q", v)
	}
	// Parked again and rejected again, past max_rejections 1: failed.
	must(t, w.sim.RemoveLabel(repo, m, lifecycletest.Label(lifecycle.Enqueued)))
	must(t, w.sim.RemoveLabel(repo, m, w.labels.Stage("plan")))
	must(t, w.sim.AddLabels(repo, m, lifecycletest.Label(lifecycle.AwaitingApproval), w.labels.Stage("implement")))
	var res decisionResult
	must(t, json.Unmarshal([]byte(w.mustCtl("reject", other, "--reason", "still too big", "-o", "json")), &res))
	if res.Outcome != "failed" || res.Actor != op || res.Ticket != other {
		t.Errorf("second reject = %+v, want failed by %s", res, op)
	}
	if is, _ = w.sim.Issue(repo, m); w.labels.StateOf(is.Labels) != lifecycle.Failed {
		t.Errorf("labels after the second reject %q, want failed", is.Labels)
	}

	// The audit says who decided.
	entries, err := audit.NewReader(w.rdb).History(ctx, refOf("app", m), timeZero, 100)
	must(t, err)
	var decisions []string
	for _, e := range entries {
		if e.Event.Kind == lifecycle.EventDecision {
			decisions = append(decisions, e.Event.Outcome+": "+e.Event.Reason)
		}
	}
	if len(decisions) != 2 || !strings.Contains(decisions[0], "rejected by "+op) || !strings.HasPrefix(decisions[1], "failed") ||
		!strings.Contains(decisions[1], op) {
		t.Errorf("decision events %q, want two naming %s", decisions, op)
	}
	if out := w.mustCtl("history", other); !strings.Contains(out, op) {
		t.Errorf("history lacks the operator:\n%s", out)
	}
}

// agentsmithctl cancel fails a parked ticket at once through the
// ApprovalGate, as "/agent-smith cancel" does: Failed with one comment
// naming the operator and the reason, the decision audited, and no cancel
// request left for a run that does not exist.
func TestCancelParkedAsOperator(t *testing.T) {
	w := newGatedWorld(t)
	ctx := t.Context()
	op := (&app{}).operator()
	n, ticket := w.parked()
	out := w.mustCtl("cancel", ticket, "--reason", "wrong repository")
	if !strings.Contains(out, "cancelled "+ticket) {
		t.Fatalf("cancel:\n%s", out)
	}
	is, _ := w.sim.Issue(repo, n)
	if s := w.labels.StateOf(is.Labels); s != lifecycle.Failed {
		t.Errorf("labels after cancel %q, want failed", is.Labels)
	}
	var cancelled []string
	for _, c := range is.Comments {
		if strings.Contains(c.Body, "cancelled by "+op) {
			cancelled = append(cancelled, c.Body)
		}
	}
	if len(cancelled) != 1 || !strings.Contains(cancelled[0], "wrong repository") || len(is.Comments) != 1 {
		t.Errorf("comments %+v, want one naming %s and the reason", is.Comments, op)
	}
	if v, err := w.rdb.Exists(ctx, keys.Cancel(ticket)).Result(); err != nil || v != 0 {
		t.Errorf("cancel request left for a parked ticket (%d, %v)", v, err)
	}
	entries, err := audit.NewReader(w.rdb).History(ctx, refOf("app", n), timeZero, 100)
	must(t, err)
	audited := false
	for _, e := range entries {
		audited = audited || e.Event.Kind == lifecycle.EventDecision && e.Event.Outcome == "cancelled" && strings.Contains(e.Event.Reason, op)
	}
	if !audited {
		t.Errorf("audit %+v lacks the cancel decision naming %s", entries, op)
	}
	// Not parked any more: a second cancel asks the run, as for any ticket.
	if out := w.mustCtl("cancel", ticket); !strings.Contains(out, "cancel requested for "+ticket) {
		t.Errorf("second cancel:\n%s", out)
	}
}
