package projects

import (
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
)

// Queue is the one place the queue's layout is built from the config: a
// level for every priority any project can give a ticket (the default
// level keeps the specification's key agentsmith:queue:jobs), those levels
// again for every pool the config names other than the default pool
// (keys.PoolQueue), and the delayed set. The daemon's claim service and
// consumers, agentsmithctl, the metrics and the status page all use the
// queue it returns, so what one of them pushes, every other one finds and
// counts. A consumer takes through Serving(cfg.Consumer.PoolNames()...).
func Queue(rdb redis.UniversalClient, cfg *config.Config) *queue.Queue {
	var prios []int
	for _, p := range cfg.Projects {
		prios = append(prios, p.Priority.Default)
		for _, v := range p.Priority.Labels {
			prios = append(prios, v)
		}
	}
	slices.Sort(prios)
	prios = slices.DeleteFunc(slices.Compact(prios), func(p int) bool { return p == config.DefaultPriority })
	levels := func(key func(int) string) []queue.Level {
		var out []queue.Level
		for _, p := range prios {
			out = append(out, queue.Level{Priority: p, Key: key(p)})
		}
		return out
	}
	var pools []queue.Pool
	for _, name := range cfg.Pools() {
		if name != config.DefaultPool {
			pools = append(pools, queue.Pool{Name: name, Key: keys.PoolQueue(name),
				Levels: levels(func(p int) string { return keys.PoolQueueLevel(name, p) })})
		}
	}
	return queue.NewWith(rdb, keys.Queue(), queue.Options{DefaultPriority: config.DefaultPriority, Levels: levels(keys.QueueLevel),
		DelayedKey: keys.Delayed(), LowerEvery: cfg.Consumer.LowerPriorityEvery, DefaultPool: config.DefaultPool, Pools: pools})
}
