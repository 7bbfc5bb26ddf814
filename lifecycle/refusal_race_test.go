package lifecycle_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// afterPipeline runs between once, after the client's first pipeline
// with an MGET (ListRefusals' read of the records) and before the next
// command it sends: the moment another replica's write lands between a
// read and the write that follows it.
type afterPipeline struct {
	mu      sync.Mutex
	read    bool
	fired   bool
	between func()
}

func (h *afterPipeline) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *afterPipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.mu.Lock()
		run := h.read && !h.fired
		h.fired = h.fired || run
		h.mu.Unlock()
		if run {
			h.between()
		}
		return next(ctx, cmd)
	}
}

func (h *afterPipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return c.Name() == "mget" }) {
			h.mu.Lock()
			h.read = true
			h.mu.Unlock()
		}
		return err
	}
}

// A refusal recorded while ListRefusals prunes an index entry whose
// record had expired stays listed: the prune removes only an entry whose
// record is still the one the listing read.
func TestListingRefusalsKeepsARefusalRecordedDuringThePrune(t *testing.T) {
	w := lifecycletest.New(t, 3)
	ctx := t.Context()
	p := w.Projects[lifecycletest.Project]
	n := w.Sim.CreateIssue(lifecycletest.Repo, "refused while listed", "", p.TriggerLabel)
	tk, err := p.Tracker.Get(ctx, lifecycletest.Ref(n))
	if err != nil {
		t.Fatal(err)
	}
	refusal := platforms.Rejected(403, errors.New("403 Resource not accessible by integration"))
	r := lifecycle.NewRefusals(w.RDB, lifecycle.RefusalsConfig{Labels: w.Labels, Logger: zap.NewNop()})
	if _, ok := r.Refused(ctx, p, tk, lifecycle.RefusalOpClaim, lifecycle.OwnerClaimService, lifecycle.SourcePoll, refusal); !ok {
		t.Fatal("a rejected write not taken as refused")
	}
	// The record expires; its index entry is left for a listing to prune.
	if err := w.RDB.Del(ctx, keys.TrackerRefusal(tk.Ref.Key())).Err(); err != nil {
		t.Fatal(err)
	}

	lister := w.Redis.Client(t)
	lister.AddHook(&afterPipeline{between: func() {
		// Another replica meets the refusal again after the listing read
		// the record as gone and before it prunes the entry.
		if _, ok := r.Refused(ctx, p, tk, lifecycle.RefusalOpClaim, lifecycle.OwnerClaimService, lifecycle.SourcePoll, refusal); !ok {
			t.Error("a rejected write not taken as refused")
		}
	}})
	if _, _, err := lifecycle.ListRefusals(ctx, lister, 0); err != nil {
		t.Fatal(err)
	}

	if _, err := w.RDB.Get(ctx, keys.TrackerRefusal(tk.Ref.Key())).Result(); err != nil {
		t.Fatalf("the second refusal's record: %v", err)
	}
	listed, total, err := lifecycle.ListRefusals(ctx, w.RDB, 0)
	if err != nil {
		t.Fatal(err)
	}
	if total != 1 || !slices.ContainsFunc(listed, func(e lifecycle.RefusalEntry) bool { return e.Ref == tk.Ref }) {
		t.Fatalf("listed %v (total %d), want %s: its refusal was recorded during the prune", listed, total, tk.Ref)
	}
}
