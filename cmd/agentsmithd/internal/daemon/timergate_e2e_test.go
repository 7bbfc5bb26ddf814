package daemon_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
)

// delayedFor is issue n's request in the delayed set and when it is due
// by Redis's clock; ok false when it has none there.
func (e *env) delayedFor(rdb *redis.Client, n int) (req lifecycle.PipelineRequest, payload string, due time.Time, ok bool) {
	e.t.Helper()
	zs, err := rdb.ZRangeWithScores(e.t.Context(), keys.Delayed(), 0, -1).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, z := range zs {
		s, _ := z.Member.(string)
		if r, err := lifecycle.DecodeRequest([]byte(s)); err == nil && r.Ref.ID == e.pc.ID(n) {
			return r, s, time.UnixMilli(int64(z.Score)), true
		}
	}
	return lifecycle.PipelineRequest{}, "", time.Time{}, false
}

// A stage with a timer gate (implement, after 1h), on each platform: once
// plan succeeded the ticket waits Enqueued with implement's label, its
// request in the delayed set due an hour on, with no run lock, and a
// comment naming when the stage starts. The replica's one consumer slot stays free: a second
// ticket runs its plan meanwhile, while the first's implement does not
// start. When the hour is over (Redis's clock, which the delayed set runs
// on, is stood in for by making the entry due) implement and test run to
// Done.
func TestTimerGateWaitsWithoutASlot(t *testing.T) {
	forEachPlatform(t, testTimerGateWaitsWithoutASlot)
}

func testTimerGateWaitsWithoutASlot(t *testing.T, e *env) {
	rdb := e.redis.Client(t)
	yml := e.gatedYAML("replica-a", "{after: 1h}")
	if !strings.Contains(yml, "consumer: {concurrency: 2,") {
		t.Fatal("the harness's consumer block changed")
	}
	e.startWith(strings.Replace(yml, "consumer: {concurrency: 2,", "consumer: {concurrency: 1,", 1))

	first := e.sim.CreateIssue(e.repo, "Wait for me", "", "agent-smith")
	eventually.Wait(t, 60*time.Second, "the first ticket's implement request in the delayed set", func() bool {
		_, _, _, ok := e.delayedFor(rdb, first)
		return ok
	})
	req, payload, due, _ := e.delayedFor(rdb, first)
	if req.Stage != "implement" {
		t.Errorf("the delayed request is for stage %q, want implement", req.Stage)
	}
	now, err := rdb.Time(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	if left := due.Sub(now); left < 50*time.Minute {
		t.Errorf("the request is due in %s by Redis's clock, want about the gate's 1h", left)
	}
	e.waitState(first, 10*time.Second, lifecycle.Enqueued)
	if is, _ := e.sim.Issue(e.repo, first); labels.WithStages(threeStages).StageOf(is.Labels) != "implement" {
		t.Errorf("labels %q, want the implement stage's", is.Labels)
	}
	if e.commentsWith(first, "stage implement waits for its timer gate (after 1h0m0s): it starts at ") != 1 {
		t.Error("no comment naming when implement starts")
	}
	eventually.Wait(t, 10*time.Second, "the waiting ticket without run lock", func() bool {
		c, err := rdb.Exists(t.Context(), keys.Heartbeat(e.pc.Name+":"+e.pc.ID(first))).Result()
		return err == nil && c == 0
	})

	second := e.sim.CreateIssue(e.repo, "Run meanwhile", "", "agent-smith")
	eventually.Wait(t, 60*time.Second, "the second ticket's plan to run and wait at the gate too", func() bool {
		_, _, _, ok := e.delayedFor(rdb, second)
		return ok && slices.Equal(e.runLines("gated", second), []string{"plan review="})
	})
	if got := e.runLines("gated", first); !slices.Equal(got, []string{"plan review="}) {
		t.Fatalf("the first ticket ran %q while its timer ran, want plan alone", got)
	}

	if n, err := queue.MakeDue(t.Context(), rdb, keys.Delayed(), [][]byte{[]byte(payload)}); err != nil || n != 1 {
		t.Fatalf("make the first ticket's request due: %d, %v", n, err)
	}
	e.waitState(first, 60*time.Second, lifecycle.Done)
	if want := []string{"plan review=", "implement review=", "test review="}; !slices.Equal(e.runLines("gated", first), want) {
		t.Errorf("stage runs %q, want %q", e.runLines("gated", first), want)
	}
	if s := e.state(second); s != lifecycle.Enqueued || !slices.Equal(e.runLines("gated", second), []string{"plan review="}) {
		t.Errorf("the second ticket is %s after %q, want still waiting for its timer after plan", s, e.runLines("gated", second))
	}
}
