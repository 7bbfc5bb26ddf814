package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

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

// readBarrier holds the first n GETs of key until all n have been sent,
// so n writers read the same value before any of them writes: the
// interleaving that loses an update made of a read, a change in Go and a
// write.
type readBarrier struct {
	key  string
	n    int
	mu   sync.Mutex
	seen int
	all  chan struct{}
}

func (b *readBarrier) DialHook(next redis.DialHook) redis.DialHook { return next }

func (b *readBarrier) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); cmd.Name() == "get" && len(args) == 2 && args[1] == b.key {
			b.mu.Lock()
			b.seen++
			wait := b.seen <= b.n
			if b.seen == b.n {
				close(b.all)
			}
			b.mu.Unlock()
			if wait {
				select {
				case <-b.all:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		return next(ctx, cmd)
	}
}

func (b *readBarrier) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Refusals of one unchanged ticket met at once by several replicas each
// count: the record's Tries ends at one less than the refusals (the first
// counts 0), so the backoff doubles as often as the tracker refused.
func TestConcurrentRefusalsEachCountATry(t *testing.T) {
	w := lifecycletest.New(t, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	p := w.Projects[lifecycletest.Project]
	n := w.Sim.CreateIssue(lifecycletest.Repo, "refused by many at once", "", p.TriggerLabel)
	tk, err := p.Tracker.Get(ctx, lifecycletest.Ref(n))
	if err != nil {
		t.Fatal(err)
	}
	refusal := platforms.Rejected(403, errors.New("403 Resource not accessible by integration"))
	const replicas = 6
	rdb := w.Redis.Client(t)
	rdb.AddHook(&readBarrier{key: keys.TrackerRefusal(tk.Ref.Key()), n: replicas, all: make(chan struct{})})
	var wg sync.WaitGroup
	for i := 0; i < replicas; i++ {
		r := lifecycle.NewRefusals(rdb, lifecycle.RefusalsConfig{Instance: fmt.Sprintf("r%d", i), Labels: w.Labels, Logger: zap.NewNop()})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, ok := r.Refused(ctx, p, tk, lifecycle.RefusalOpClaim, lifecycle.OwnerClaimService, lifecycle.SourcePoll, refusal); !ok {
				t.Error("a rejected write not taken as refused")
			}
		}()
	}
	wg.Wait()
	listed, _, err := lifecycle.ListRefusals(ctx, w.RDB, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].Tries != replicas-1 {
		t.Fatalf("listed %+v, want one entry with Tries %d after %d refusals", listed, replicas-1, replicas)
	}
}
