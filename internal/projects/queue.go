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
// level keeps the specification's key agentsmith:queue:jobs) and the
// delayed set. The daemon's claim service and consumers, agentsmithctl,
// the metrics and the status page all use the queue it returns, so what
// one of them pushes, every other one finds and counts.
func Queue(rdb redis.UniversalClient, cfg *config.Config) *queue.Queue {
	var prios []int
	for _, p := range cfg.Projects {
		prios = append(prios, p.Priority.Default)
		for _, v := range p.Priority.Labels {
			prios = append(prios, v)
		}
	}
	slices.Sort(prios)
	var levels []queue.Level
	for _, p := range slices.Compact(prios) {
		if p != config.DefaultPriority {
			levels = append(levels, queue.Level{Priority: p, Key: keys.QueueLevel(p)})
		}
	}
	return queue.NewWith(rdb, keys.Queue(), queue.Options{DefaultPriority: config.DefaultPriority, Levels: levels,
		DelayedKey: keys.Delayed(), LowerEvery: cfg.Consumer.LowerPriorityEvery})
}
