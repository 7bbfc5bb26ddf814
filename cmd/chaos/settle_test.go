package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// A ticket that ends after the settle deadline is slow, one that never
// ends is lost, one that ended in time is neither.
func TestClassifySettleTellsSlowFromLost(t *testing.T) {
	gh := projects[0]
	mk := func(n int) *ticket { return &ticket{p: gh, n: n, id: gh.ID(n), source: "webhook+poll"} }
	inTime, slow, lost := mk(1), mk(2), mk(3)
	deadline := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ended := map[string]time.Time{inTime.id: deadline.Add(-time.Second), slow.id: deadline.Add(7 * time.Second)}
	states := map[string][]string{
		inTime.id: {daemonLabels.Label(lifecycle.Done)}, slow.id: {daemonLabels.Label(lifecycle.Failed)},
		lost.id: {"agent-smith", daemonLabels.Label(lifecycle.Enqueued)},
	}
	s, l := classifySettle([]*ticket{lost, slow, inTime}, ended, states, deadline, deadline.Add(time.Minute))
	if len(s) != 1 || s[0].t != slow || s[0].Late != 7*time.Second || s[0].Lost {
		t.Errorf("slow = %v, want only %s, 7s late", s, slow.id)
	}
	if len(l) != 1 || l[0].t != lost || l[0].Late != time.Minute || l[0].State != lifecycle.Enqueued || !l[0].Lost {
		t.Errorf("lost = %v, want only %s, enqueued, watched 1m past the deadline", l, lost.id)
	}
	if got := s[0].String(); !strings.Contains(got, "slow, ended failed +7s after the deadline") {
		t.Errorf("slow line %q", got)
	}
	if got := l[0].String(); !strings.Contains(got, "lost, not terminal 1m0s after the deadline, state enqueued") {
		t.Errorf("lost line %q", got)
	}
}

// watchSettle returns once every ticket is terminal, and otherwise watches
// until the end of the grace, reporting the open ticket as never ended.
func TestWatchSettleWaitsOutTheGraceOnlyForOpenTickets(t *testing.T) {
	w := &world{sim: trackersim.New(trackersim.Options{})}
	defer w.sim.Close()
	gh := projects[0]
	w.sim.CreateRepo(gh.Repo)
	done := w.sim.CreateIssue(gh.Repo, "a", "", "agent-smith", daemonLabels.Label(lifecycle.Done))
	open := w.sim.CreateIssue(gh.Repo, "b", "", "agent-smith", daemonLabels.Label(lifecycle.Enqueued))
	td := &ticket{p: gh, n: done, id: gh.ID(done)}
	to := &ticket{p: gh, n: open, id: gh.ID(open)}
	ctx := context.Background()

	start := time.Now()
	ended, _ := watchSettle(ctx, w, []*ticket{td}, start.Add(time.Hour), time.Hour, 10*time.Millisecond)
	if _, ok := ended[td.id]; !ok || time.Since(start) > 30*time.Second {
		t.Fatalf("all terminal: ended %v after %s, want %s at once", ended, time.Since(start), td.id)
	}

	deadline := time.Now()
	ended, states := watchSettle(ctx, w, []*ticket{td, to}, deadline, 300*time.Millisecond, 10*time.Millisecond)
	if time.Since(deadline) < 300*time.Millisecond {
		t.Errorf("returned %s after the deadline, before the 300ms grace", time.Since(deadline))
	}
	if _, ok := ended[to.id]; ok {
		t.Errorf("open ticket reported ended: %v", ended)
	}
	if !has(states[to.id], lifecycle.Enqueued) {
		t.Errorf("last labels of the open ticket %v", states[to.id])
	}
}

// A lost ticket's diagnosis says where its request is and what holds it:
// here a request in the delayed set and a claim lock with its TTL, and no
// heartbeat.
func TestLostDiagnosisShowsRequestAndLocks(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	w := &world{sim: trackersim.New(trackersim.Options{}), dir: t.TempDir()}
	defer w.sim.Close()
	gh := projects[0]
	w.sim.CreateRepo(gh.Repo)
	n := w.sim.CreateIssue(gh.Repo, "x", "", "agent-smith", daemonLabels.Label(lifecycle.Enqueued))
	tk := &ticket{p: gh, n: n, id: gh.ID(n), source: "webhook+poll"}
	ctx := context.Background()
	due := time.Now().Add(4 * time.Minute)
	if err := rdb.ZAdd(ctx, keys.Delayed(), redis.Z{Score: float64(due.UnixMilli()), Member: `{"id":"` + tk.id + `","platform":"github"}`}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, keys.ClaimLock("github", tk.id), "r1.2/poll", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(lostDiagnosis(ctx, w, rdb, tk), "\n")
	t.Logf("diagnosis:\n%s", got)
	for _, want := range []string{
		"labels [agent-smith agent-smith:enqueued]",
		"request in " + keys.Delayed() + " (due " + due.Format("15:04:05.000") + " by Redis's clock, 3m5",
		keys.ClaimLock("github", tk.id) + " = r1.2/poll (ttl ",
		keys.Heartbeat("github:"+tk.id) + " absent",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("diagnosis lacks %q:\n%s", want, got)
		}
	}
}
