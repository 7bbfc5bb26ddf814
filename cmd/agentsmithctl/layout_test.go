package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/ops"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// agentsmithctl reads the queue with the daemon's layout: a request
// waiting on a priority level, or in the delayed set, counts as queued, so
// requeue pushes no duplicate and status counts it.
func TestRequeueAndStatusSeeEveryLevelAndTheDelayedSet(t *testing.T) {
	w := newWorldWith(t, "    priority: {labels: {\"priority:high\": 1}}\n")
	ctx := context.Background()
	high := keys.QueueLevel(1)
	for _, c := range []struct {
		name  string
		place func(req lifecycle.PipelineRequest) error
	}{
		{"priority level", func(req lifecycle.PipelineRequest) error { return w.rdb.RPush(ctx, high, req.Encode()).Err() }},
		{"delayed set", func(req lifecycle.PipelineRequest) error {
			return w.rdb.ZAdd(ctx, keys.Delayed(), redis.Z{Score: float64(time.Now().Add(time.Hour).UnixMilli()), Member: req.Encode()}).Err()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			must(t, w.rdb.FlushDB(ctx).Err())
			n := w.sim.CreateIssue(repo, "Urgent", "", "agent-smith", lifecycletest.Label(lifecycle.Enqueued), "priority:high")
			ref := refOf("app", n)
			req := lifecycle.PipelineRequest{ID: "r-" + c.name, Ref: ref, Source: lifecycle.SourceWebhook, Attempt: 1,
				EnqueuedAt: time.Now().Add(-time.Minute), Priority: 1}
			must(t, c.place(req))

			out := w.mustCtl("requeue", ref.String())
			if !strings.Contains(out, "not requeued") || !strings.Contains(out, "already queued") {
				t.Errorf("requeue of a ticket whose request waits on the %s:\n%s", c.name, out)
			}
			for _, k := range []string{keys.Queue(), high} {
				if vs, _ := w.rdb.LRange(ctx, k, 0, -1).Result(); len(vs) > 0 && !strings.Contains(vs[0], req.ID) || len(vs) > 1 {
					t.Errorf("%s after requeue = %q: a duplicate request was pushed", k, vs)
				}
			}

			var snap ops.Snapshot
			must(t, json.Unmarshal([]byte(w.mustCtl("status", "-o", "json")), &snap))
			wantDepth, wantDelayed := int64(1), int64(0)
			if c.name == "delayed set" {
				wantDepth, wantDelayed = 0, 1
			}
			if snap.Queue.Depth != wantDepth || snap.Queue.Delayed != wantDelayed || snap.Queue.Oldest != ref.String() ||
				snap.Queue.OldestAgeMS < 59_000 {
				t.Errorf("status queue = %+v, want depth %d, delayed %d, oldest %s waiting a minute", snap.Queue, wantDepth, wantDelayed, ref)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(fmt.Errorf("%s: %w", t.Name(), err))
	}
}
