package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/redisserver"
)

// clusterRedis is a Redis Cluster of three masters, each with one replica,
// for the failover fault (-cluster): the replicas run agentsmithd with
// redis.mode cluster, and a master is killed -9 mid-run so its replica is
// promoted. It is a flag of `make chaos`, not part of TestChaosShort: six
// redis-servers beside three replicas are too heavy for the short run.
type clusterRedis struct {
	masters, replicas []*redisserver.Process
}

var clusterArgs = []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000"}

// startCluster starts the six nodes, splits the slots among the masters,
// joins them and makes node i+3 the replica of master i.
func startCluster(ctx context.Context, bin, dir string) (*clusterRedis, error) {
	c := &clusterRedis{}
	for i := range 6 {
		d := filepath.Join(dir, fmt.Sprintf("redis-node-%d", i))
		if err := os.MkdirAll(d, 0o750); err != nil {
			return c, fmt.Errorf("cluster: %w", err)
		}
		p, err := redisserver.StartSpec(ctx, bin, d, redisserver.Spec{Args: clusterArgs})
		if err != nil {
			return c, fmt.Errorf("cluster: %w", err)
		}
		if i < 3 {
			c.masters = append(c.masters, p)
		} else {
			c.replicas = append(c.replicas, p)
		}
	}
	all := append(append([]*redisserver.Process(nil), c.masters...), c.replicas...)
	clients := make([]*redis.Client, len(all))
	for i, p := range all {
		clients[i] = redis.NewClient(p.ClientOptions())
		defer clients[i].Close()
	}
	const slots = 16384
	for i := range c.masters {
		lo, hi := i*slots/3, (i+1)*slots/3-1
		ss := make([]int, 0, hi-lo+1)
		for s := lo; s <= hi; s++ {
			ss = append(ss, s)
		}
		if err := clients[i].ClusterAddSlots(ctx, ss...).Err(); err != nil {
			return c, fmt.Errorf("cluster: addslots: %w", err)
		}
	}
	host, port, _ := strings.Cut(all[0].Addr(), ":")
	for _, rdb := range clients[1:] {
		if err := rdb.ClusterMeet(ctx, host, port).Err(); err != nil {
			return c, fmt.Errorf("cluster: meet: %w", err)
		}
	}
	if err := waitCluster(ctx, clients, func(rdb *redis.Client) bool {
		info, err := rdb.ClusterInfo(ctx).Result()
		return err == nil && strings.Contains(info, "cluster_known_nodes:6")
	}); err != nil {
		return c, err
	}
	for i := range c.replicas {
		id, err := clients[i].ClusterMyID(ctx).Result()
		if err != nil {
			return c, fmt.Errorf("cluster: myid: %w", err)
		}
		if err := clients[3+i].ClusterReplicate(ctx, id).Err(); err != nil {
			return c, fmt.Errorf("cluster: replicate: %w", err)
		}
	}
	return c, waitCluster(ctx, clients, func(rdb *redis.Client) bool {
		info, err := rdb.ClusterInfo(ctx).Result()
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return false
		}
		repl, err := rdb.Info(ctx, "replication").Result()
		return err == nil && (strings.Contains(repl, "role:master") || strings.Contains(repl, "master_link_status:up"))
	})
}

// waitCluster polls until ok holds for every client (30 s at most).
func waitCluster(ctx context.Context, clients []*redis.Client, ok func(*redis.Client) bool) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		n := 0
		for _, rdb := range clients {
			if ok(rdb) {
				n++
			}
		}
		if n == len(clients) {
			return nil
		}
		if !sleepCtx(ctx, 100*time.Millisecond) { // polling the cluster with a deadline
			return ctx.Err()
		}
	}
	return errors.New("cluster: nodes not ready within 30 s")
}

func (c *clusterRedis) addrs() []string {
	var out []string
	for _, p := range append(append([]*redisserver.Process(nil), c.masters...), c.replicas...) {
		out = append(out, p.Addr())
	}
	return out
}

func (c *clusterRedis) stop() {
	for _, p := range append(append([]*redisserver.Process(nil), c.masters...), c.replicas...) {
		_ = p.Stop()
	}
}

// failoverFigures are the figures of one master killed under load.
type failoverFigures struct {
	happened bool
	killed   string        // the master that held the daemon's slot
	promoted time.Duration // kill -9 → a replica serves the slot, cluster_state ok
}

// failover kills -9, at half the run, the master holding the daemon's
// keys (cluster mode puts them all in one slot by a hash tag) and waits
// until another node serves that slot.
func (w *world) failover(fctx, ctx context.Context, o Options) failoverFigures {
	var f failoverFigures
	if w.cluster == nil || !sleepCtx(fctx, o.Duration/2) {
		return f
	}
	probe := redis.NewClient(w.cluster.replicas[0].ClientOptions())
	defer probe.Close()
	slot, err := probe.ClusterKeySlot(ctx, keys.Queue()).Result()
	if err != nil {
		fmt.Fprintf(w.logw, "chaos: cluster keyslot: %v\n", err)
		return f
	}
	// owner is the healthy master serving slot, as rdb sees it
	// (CLUSTER SHARDS, Redis 7).
	owner := func(rdb *redis.Client) string {
		shards, err := rdb.ClusterShards(ctx).Result()
		if err != nil {
			return ""
		}
		for _, sh := range shards {
			for _, r := range sh.Slots {
				if r.Start > slot || slot > r.End {
					continue
				}
				for _, n := range sh.Nodes {
					if n.Role == "master" && n.Health == "online" {
						return fmt.Sprintf("%s:%d", n.IP, n.Port)
					}
				}
			}
		}
		return ""
	}
	victim := owner(probe)
	var vp *redisserver.Process
	for _, p := range w.cluster.masters {
		if p.Addr() == victim {
			vp = p
		}
	}
	if vp == nil {
		fmt.Fprintf(w.logw, "chaos: cluster: no master %q serves slot %d\n", victim, slot)
		return f
	}
	at := time.Now()
	if err := vp.Kill(); err != nil {
		fmt.Fprintf(w.logw, "chaos: cluster kill: %v\n", err)
		return f
	}
	w.record("redis-master-kill", "", 0)
	f.happened, f.killed = true, victim
	var survivor *redis.Client
	for _, p := range append(append([]*redisserver.Process(nil), w.cluster.masters...), w.cluster.replicas...) {
		if p != vp {
			survivor = redis.NewClient(p.ClientOptions())
			break
		}
	}
	defer survivor.Close()
	deadline := at.Add(60 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		info, err := survivor.ClusterInfo(ctx).Result()
		if o := owner(survivor); err == nil && o != "" && o != victim && strings.Contains(info, "cluster_state:ok") {
			f.promoted = time.Since(at)
			w.record("redis-promoted", "", 0)
			return f
		}
		time.Sleep(50 * time.Millisecond) // polling the cluster with a deadline
	}
	fmt.Fprintf(w.logw, "chaos: cluster: no replica promoted within 60 s\n")
	return f
}

func (f *failoverFigures) print(row func(string, any)) {
	if !f.happened {
		return
	}
	v := "never"
	if f.promoted > 0 {
		v = f.promoted.Round(10 * time.Millisecond).String()
	}
	row("Redis Cluster master kill -9 → replica promoted", v)
}

// redisYAML is the replicas' redis config: the one server, or the
// cluster's nodes as seeds.
// replicaRedisYAML is a replica's redis block: through its own proxy to
// the standalone server (partitions cut it), or the cluster's nodes.
func (w *world) replicaRedisYAML(r *replica) string {
	if w.cluster == nil {
		return fmt.Sprintf("{addr: %q}", r.redisNet.Addr())
	}
	return fmt.Sprintf("{mode: cluster, addrs: [%s]}", `"`+strings.Join(w.cluster.addrs(), `", "`)+`"`)
}
