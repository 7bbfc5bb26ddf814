package gate_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/gate"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// deadlined parks a ticket before implement, whose gate has a 48h
// timeout with onTimeout, parked (keys.GateParked) at the clock's time.
func deadlined(t *testing.T, onTimeout string) (*lifecycletest.World, *gate.Gate, *clock, int) {
	t.Helper()
	w, _, n := staged(t, 2)
	a := w.Projects[lifecycletest.Project].Stages[1].Gate.Approval
	a.Timeout, a.OnTimeout, a.EscalateLabel, a.Mention = 48*time.Hour, onTimeout, "needs-human", []string{"@oncall", "@lead"}
	c := &clock{now: time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)}
	if err := w.RDB.Set(t.Context(), keys.GateParked(lifecycletest.Ref(n).Key()), c.now.Format(time.RFC3339Nano), keys.GateTTL).Err(); err != nil {
		t.Fatal(err)
	}
	return w, gate.New(w.RDB, w.Claims, w.Queue, gate.Config{Instance: "test", Clock: c.Now}), c, n
}

func expire(t *testing.T, g *gate.Gate, n int) string {
	t.Helper()
	out, err := g.Expire(t.Context(), lifecycletest.Ref(n))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// on_timeout escalate: nothing before the deadline; past it the
// escalation label and one comment mentioning the handles, once, the
// ticket staying parked.
func TestDeadlineEscalatesOnce(t *testing.T) {
	w, g, c, n := deadlined(t, lifecycle.OnTimeoutEscalate)
	c.Add(48*time.Hour - time.Second)
	if out := expire(t, g, n); out != "" || len(w.Comments(t, n)) != 0 {
		t.Fatalf("before the deadline: %q, comments %q; want nothing", out, w.Comments(t, n))
	}
	c.Add(time.Second)
	if out := expire(t, g, n); out != gate.OutcomeEscalated {
		t.Fatalf("at the deadline: %q, want escalated", out)
	}
	c.Add(time.Hour)
	if out := expire(t, g, n); out != "" {
		t.Errorf("second check: %q, want nothing (escalated once)", out)
	}
	cs := w.Comments(t, n)
	if len(cs) != 1 || !strings.Contains(cs[0], "@oncall @lead") || !strings.Contains(cs[0], "escalated") {
		t.Errorf("comments %q, want one escalation mentioning @oncall @lead", cs)
	}
	if l := labelsOf(t, w, n); !slices.Contains(l, "needs-human") || w.State(t, n) != lifecycle.AwaitingApproval {
		t.Errorf("labels %q, want needs-human added, still awaiting approval", l)
	}
	// A new parking (the executor's record) escalates again past its own deadline.
	if err := w.RDB.Set(t.Context(), keys.GateParked(lifecycletest.Ref(n).Key()), c.Now().Format(time.RFC3339Nano), keys.GateTTL).Err(); err != nil {
		t.Fatal(err)
	}
	if out := expire(t, g, n); out != "" {
		t.Errorf("new parking before its deadline: %q", out)
	}
	c.Add(48 * time.Hour)
	if out := expire(t, g, n); out != gate.OutcomeEscalated {
		t.Errorf("new parking past its deadline: %q, want escalated", out)
	}
}

// on_timeout fail: past the deadline the ticket fails, the comment saying
// the gate timed out, and the gate's records are dropped.
func TestDeadlineFails(t *testing.T) {
	w, g, c, n := deadlined(t, lifecycle.OnTimeoutFail)
	c.Add(49 * time.Hour)
	if out := expire(t, g, n); out != gate.OutcomeTimedOut {
		t.Fatalf("past the deadline: %q, want timed out", out)
	}
	if s := w.State(t, n); s != lifecycle.Failed {
		t.Errorf("state %s, want failed", s)
	}
	if cs := w.Comments(t, n); len(cs) != 1 || !strings.Contains(cs[0], "approval gate timed out") {
		t.Errorf("comments %q, want one saying the gate timed out", cs)
	}
	if n, _ := w.RDB.Exists(t.Context(), keys.GateParked(lifecycletest.Ref(n).Key())).Result(); n != 0 {
		t.Error("parked record kept after the failure")
	}
	if reqs := w.Requests(t); len(reqs) != 0 {
		t.Errorf("queue %+v, want empty", reqs)
	}
}

// A ticket parked without a record counts from the first check; a gate
// without a timeout never expires.
func TestDeadlineWithoutRecordOrTimeout(t *testing.T) {
	w, g, c, n := deadlined(t, lifecycle.OnTimeoutFail)
	ref := lifecycletest.Ref(n)
	if err := w.RDB.Del(t.Context(), keys.GateParked(ref.Key())).Err(); err != nil {
		t.Fatal(err)
	}
	c.Add(100 * time.Hour)
	if out := expire(t, g, n); out != "" {
		t.Fatalf("first check without a record: %q, want nothing", out)
	}
	c.Add(48 * time.Hour)
	if out := expire(t, g, n); out != gate.OutcomeTimedOut {
		t.Errorf("48h after the first check: %q, want timed out", out)
	}

	w2, g2, c2, n2 := deadlined(t, lifecycle.OnTimeoutFail)
	w2.Projects[lifecycletest.Project].Stages[1].Gate.Approval.Timeout = 0
	c2.Add(1000 * time.Hour)
	if out := expire(t, g2, n2); out != "" || w2.State(t, n2) != lifecycle.AwaitingApproval {
		t.Errorf("no timeout: %q, state %s; want nothing", out, w2.State(t, n2))
	}
}

// Expire finishes a decision recorded but not carried out (a crash
// between record and write), as Repair does, and then applies no deadline.
func TestExpireFinishesRecordedDecision(t *testing.T) {
	w, g, c, n := deadlined(t, lifecycle.OnTimeoutFail)
	ref := lifecycletest.Ref(n)
	rec := `{"kind":"approve","actor":"dana","stage":"implement"}`
	if err := w.RDB.Set(t.Context(), keys.GateDecision(ref.Key()), rec, keys.GateTTL).Err(); err != nil {
		t.Fatal(err)
	}
	c.Add(49 * time.Hour)
	if out := expire(t, g, n); out != "" {
		t.Errorf("outcome %q, want the decision carried out, no deadline", out)
	}
	if s := w.State(t, n); s != lifecycle.Enqueued {
		t.Errorf("state %s, want enqueued by the recorded approval", s)
	}
	if reqs := w.Requests(t); len(reqs) != 1 || reqs[0].Stage != "implement" {
		t.Errorf("queue %+v, want implement's request", reqs)
	}
}
