package ops_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle/ops"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
)

// On a Redis Cluster the liveness keys and processing lists are spread
// over every master (without the hash tag, as here, each key hashes to its
// own slot): Read finds them on all of them, not on the one node a plain
// SCAN reaches.
func TestReadScansEveryClusterNode(t *testing.T) {
	rdb := redistest.StartCluster(t, 3).Client(t)
	ctx := t.Context()
	const n = 24
	for i := range n {
		id := fmt.Sprintf("replica-%02d", i)
		if err := rdb.Set(ctx, keys.Instance(id), id, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.RPush(ctx, keys.Processing(id), "taken").Err(); err != nil {
			t.Fatal(err)
		}
	}
	s, err := ops.Read(ctx, rdb, queue.New(rdb, keys.Queue()), ops.ReadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Instances) != n || s.Queue.Processing != n {
		t.Errorf("read %d instances and %d taken requests, want %d of each", len(s.Instances), s.Queue.Processing, n)
	}
	for i, inst := range s.Instances {
		if want := fmt.Sprintf("replica-%02d", i); inst.ID != want {
			t.Errorf("instance %d = %q, want %q (sorted)", i, inst.ID, want)
		}
	}
}
