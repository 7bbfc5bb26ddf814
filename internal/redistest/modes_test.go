package redistest_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
)

func TestClusterServesEverySlot(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	rdb := c.Client(t)
	ctx := context.Background()
	// Keys spread over every node: each write lands on the slot's owner.
	for i := range 50 {
		if err := rdb.Set(ctx, fmt.Sprintf("k%d", i), i, 0).Err(); err != nil {
			t.Fatalf("set k%d: %v", i, err)
		}
	}
	var masters atomic.Int32 // ForEachMaster calls back concurrently
	if err := rdb.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		if size, err := n.DBSize(ctx).Result(); err != nil || size == 0 {
			return fmt.Errorf("node %s: dbsize %d, %v", n.Options().Addr, size, err)
		}
		masters.Add(1)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := masters.Load(); n != 3 {
		t.Errorf("%d masters, want 3", n)
	}
}

func TestSentinelNamesMaster(t *testing.T) {
	s := redistest.StartSentinel(t, redistest.SentinelOptions{Password: "data-pw", SentinelPassword: "sentinel-pw"})
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: redistest.SentinelMaster,
		SentinelAddrs: s.Addrs(), SentinelPassword: "sentinel-pw", Password: "data-pw"})
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The write went to the master the sentinel names.
	if v, err := s.Master.Client(t).Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Errorf("master has k = %q, %v", v, err)
	}
}
