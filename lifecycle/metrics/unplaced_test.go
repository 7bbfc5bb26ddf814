package metrics_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/metrics"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
)

// A request naming a pool this replica's queue does not hold is parked,
// and agentsmith_queue_unplaced_total counts it by pool; a name that is
// no pool name shows as "invalid", never as itself.
func TestQueueUnplacedByPool(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	q := queue.NewWith(rdb, keys.Queue(), queue.Options{DefaultPriority: lifecycle.DefaultPriority, DelayedKey: keys.Delayed(),
		DefaultPool: lifecycle.DefaultPool})
	m := metrics.New(metrics.Config{Redis: rdb, Queue: q})
	ctx := context.Background()
	for i, pool := range []string{"gpu", "gpu", "Bad Pool{x}", ""} {
		req := lifecycle.PipelineRequest{ID: fmt.Sprint("r", i), Ref: ref, Attempt: 1, EnqueuedAt: time.Now(), Pool: pool}
		must(t, q.Push(ctx, req.Encode()))
	}
	want := fmt.Sprintf(`
# HELP agentsmith_queue_unplaced_total %s
# TYPE agentsmith_queue_unplaced_total counter
agentsmith_queue_unplaced_total{pool="gpu"} 2
agentsmith_queue_unplaced_total{pool="invalid"} 1
`, metrics.HelpQueueUnplaced)
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "agentsmith_queue_unplaced_total"); err != nil {
		t.Error(err)
	}
}
