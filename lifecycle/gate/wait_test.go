package gate_test

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/gate"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/metrics"
)

// A decision, or a deadline that fails the ticket, observes how long the
// ticket awaited approval, from its park to the move by the gate's clock,
// under the gated stage and the decision; the events name who decided,
// and the ticket leaves the parked index.
func TestDecisionObservesApprovalWait(t *testing.T) {
	for _, tc := range []struct {
		kind, decision string
		wait           time.Duration
	}{
		{gate.Approve, gate.OutcomeApproved, 90 * time.Minute},
		{gate.Reject, gate.OutcomeRejected, 3 * time.Hour},
		{"timeout", gate.OutcomeTimedOut, 49 * time.Hour}, // past the gate's 48 h, on_timeout fail
	} {
		t.Run(tc.kind, func(t *testing.T) {
			w, _, n := staged(t, 2)
			m := metrics.New(metrics.Config{})
			rec := &lifecycletest.Recorder{}
			claims := claim.NewService(w.RDB, w.Queue, w.Projects, claim.Config{Instance: "test", Labels: w.Labels, Observer: lifecycle.Observers{m, rec}})
			parked := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
			now := parked
			g := gate.New(w.RDB, claims, w.Queue, gate.Config{Instance: "test", Clock: func() time.Time { return now }})
			ref := lifecycletest.Ref(n)
			if err := lifecycle.Park(t.Context(), w.RDB, lifecycle.ParkedEntry{Ref: ref, Stage: "implement", Title: "parked", Since: parked}); err != nil {
				t.Fatal(err)
			}
			now = parked.Add(tc.wait)
			actor := "dana"
			if tc.kind == "timeout" {
				a := w.Projects[lifecycletest.Project].Stages[1].Gate.Approval
				a.Timeout, a.OnTimeout, actor = 48*time.Hour, lifecycle.OnTimeoutFail, ""
				if out, err := g.Expire(t.Context(), ref); err != nil || out != tc.decision {
					t.Fatalf("expire = %q, %v; want %s", out, err, tc.decision)
				}
			} else if res, err := g.Decide(t.Context(), ref, actor, gate.Decision{Kind: tc.kind, Reason: "needs tests"}); err != nil || res.Outcome != tc.decision {
				t.Fatalf("decide = %+v, %v; want %s", res, err, tc.decision)
			}
			h := approvalWait(t, m)
			if h == nil {
				t.Fatal("no agentsmith_approval_wait_seconds series")
			}
			labels := map[string]string{}
			for _, l := range h.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			want := map[string]string{"project": lifecycletest.Project, "stage": "implement", "decision": tc.decision}
			for k, v := range want {
				if labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, labels[k], v)
				}
			}
			if got := h.GetHistogram(); got.GetSampleCount() != 1 || got.GetSampleSum() != tc.wait.Seconds() {
				t.Errorf("observed %d samples summing %v s, want 1 of %v s", got.GetSampleCount(), got.GetSampleSum(), tc.wait.Seconds())
			}
			var moved []lifecycle.Event
			for _, ev := range rec.Kind(lifecycle.EventTransition) {
				if ev.From == lifecycle.AwaitingApproval {
					moved = append(moved, ev)
				}
			}
			if len(moved) != 1 || moved[0].Actor != actor || moved[0].Stage != "implement" || moved[0].ApprovalWait != tc.wait {
				t.Errorf("transitions out of awaiting-approval %+v, want one by %q for implement after %s", moved, actor, tc.wait)
			}
			if decisions := rec.Kind(lifecycle.EventDecision); tc.kind != "timeout" && (len(decisions) != 1 || decisions[0].Actor != actor) {
				t.Errorf("decision events %+v, want one by %s", decisions, actor)
			}
			left, total, err := lifecycle.ListParked(t.Context(), w.RDB, 0)
			if err != nil || total != 0 || len(left) != 0 {
				t.Errorf("parked index after the decision: %+v (total %d, %v), want empty", left, total, err)
			}
		})
	}
}

// approvalWait is the one agentsmith_approval_wait_seconds series, nil
// when there is none or more.
func approvalWait(t *testing.T, m *metrics.Metrics) *dto.Metric {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "agentsmith_approval_wait_seconds" && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0]
		}
	}
	return nil
}
