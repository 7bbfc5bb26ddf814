package lifecycle_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// letGoWatch looks, after each command that names one ticket's run lock,
// whether the run let go (the lock was held, now it is gone), and reads
// then, once, whether the ticket's park is recorded in the parked index.
type letGoWatch struct {
	look     *redis.Client // unhooked
	hb, info string
	field    string

	mu         sync.Mutex
	held, seen bool
	parked     bool
}

func (h *letGoWatch) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *letGoWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *letGoWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if !slices.ContainsFunc(cmd.Args(), func(a any) bool { s, _ := a.(string); return s == h.hb }) {
			return err
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.seen {
			return err
		}
		n, lerr := h.look.Exists(context.Background(), h.hb).Result()
		switch {
		case lerr != nil:
		case n == 1:
			h.held = true
		case h.held:
			h.seen = true
			h.parked, _ = h.look.HExists(context.Background(), h.info, h.field).Result()
		}
		return err
	}
}

// The run that parks a ticket at an approval gate records the park
// (lifecycle.Park: keys.GateParked and the parked index) before it lets go
// of the ticket: the ApprovalGate waits for the run to let go, so a
// decision made the moment it does finds the park recorded and drops it,
// instead of the run's late park listing a ticket that moved on.
func TestRunRecordsItsParkBeforeItLetsGo(t *testing.T) {
	w := lifecycletest.New(t, 1)
	dir := t.TempDir()
	p := w.Projects[lifecycletest.Project]
	logStage := []string{"sh", "-c", `echo "$AGENTSMITH_STAGE" >> "$D/runs"`}
	p.Stages = []lifecycle.Stage{{Name: "plan", Command: logStage, Timeout: time.Minute, MaxAttempts: 1},
		{Name: "implement", Command: logStage, Timeout: time.Minute, MaxAttempts: 1, Gate: &lifecycle.Gate{Approval: &lifecycle.Approval{
			Approvers: lifecycle.TriggerAllow{Users: []string{"dana"}}, MaxRejections: 2}}}}
	n := w.Sim.CreateIssue(lifecycletest.Repo, "park me", "")
	ref := lifecycletest.Ref(n)
	watch := &letGoWatch{look: w.Redis.Client(t), hb: keys.Heartbeat(ref.Key()), info: keys.ParkedInfo(), field: ref.Key()}
	w.RDB.AddHook(watch)
	consumertest.RunWorld(t, w, dir, 1)
	if err := w.Sim.AddLabels(lifecycletest.Repo, n, p.TriggerLabel); err != nil {
		t.Fatal(err)
	}
	if res, err := w.Claims.Claim(t.Context(), ref, lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	eventually.Wait(t, 20*time.Second, "plan's run to let go of the parked ticket", func() bool {
		watch.mu.Lock()
		defer watch.mu.Unlock()
		return watch.seen
	})
	if s := w.State(t, n); s != lifecycle.AwaitingApproval {
		t.Fatalf("state %s, want awaiting-approval", s)
	}
	watch.mu.Lock()
	defer watch.mu.Unlock()
	if !watch.parked {
		t.Error("the run let go of the ticket before its park was recorded in the parked index")
	}
}
