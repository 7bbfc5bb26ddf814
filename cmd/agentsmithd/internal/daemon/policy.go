package daemon

import (
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
)

// newQueue builds the queue with one level per priority any project can
// give a ticket; the default level keeps the specification's key.
func newQueue(rdb redis.UniversalClient, cfg *config.Config) *queue.Queue {
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
