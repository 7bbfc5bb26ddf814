package redistest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/redisserver"
)

// clusterSlots is the number of hash slots of every Redis Cluster.
const clusterSlots = 16384

// Cluster is a test's private Redis Cluster of masters without replicas,
// each a redis-server with cluster-enabled on a free loopback port.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts masters (at least 3, the least redis-cli accepts and
// the least that spreads slots meaningfully) nodes, splits the 16384 slots
// among them (CLUSTER ADDSLOTS), joins them (CLUSTER MEET), and returns
// once every node reports cluster_state:ok. Nodes stop at cleanup.
func StartCluster(t testing.TB, masters int) *Cluster {
	t.Helper()
	if masters < 3 {
		t.Fatalf("redistest: a cluster needs at least 3 masters, got %d", masters)
	}
	c := &Cluster{}
	for range masters {
		c.Nodes = append(c.Nodes, StartSpec(t, Spec{Args: []string{
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "2000",
		}}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisserver.StartTimeout)
	defer cancel()
	if err := c.form(ctx); err != nil {
		t.Fatalf("redistest: form cluster: %v", err)
	}
	return c
}

func (c *Cluster) form(ctx context.Context) error {
	clients := make([]*redis.Client, len(c.Nodes))
	for i, n := range c.Nodes {
		clients[i] = redis.NewClient(n.p.ClientOptions())
		defer clients[i].Close()
	}
	per := clusterSlots / len(c.Nodes)
	for i, rdb := range clients {
		lo, hi := i*per, (i+1)*per-1
		if i == len(clients)-1 {
			hi = clusterSlots - 1
		}
		// CLUSTER ADDSLOTS with every slot rather than ADDSLOTSRANGE,
		// which needs Redis 7.0.
		slots := make([]int, 0, hi-lo+1)
		for s := lo; s <= hi; s++ {
			slots = append(slots, s)
		}
		if err := rdb.ClusterAddSlots(ctx, slots...).Err(); err != nil {
			return fmt.Errorf("addslots on %s: %w", c.Nodes[i].Addr(), err)
		}
		if i > 0 {
			host, port, _ := strings.Cut(c.Nodes[0].Addr(), ":")
			if err := rdb.ClusterMeet(ctx, host, port).Err(); err != nil {
				return fmt.Errorf("meet from %s: %w", c.Nodes[i].Addr(), err)
			}
		}
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ok := 0
		for _, rdb := range clients {
			info, err := rdb.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") &&
				strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d", len(clients))) {
				ok++
			}
		}
		if ok == len(clients) {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("nodes did not report cluster_state:ok before the deadline")
		case <-tick.C:
		}
	}
}

// Addrs are the nodes' addresses, the seed list of a cluster client.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr()
	}
	return out
}

// Client returns a cluster client, closed at cleanup.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}
