package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
)

// HelpQueueUnplaced: such an entry waits for a replica whose config names
// its pool; a count that keeps growing means none does.
const HelpQueueUnplaced = "Requests this replica put (back) in the delayed set because they name a pool its config does not (queue.Unplaced), by pool (\"invalid\" for a name that is not a pool name)."

// unplacedCollector exports the replica's queue.UnplacedByPool, read at
// scrape time: the queue counts, so nothing is missed between scrapes.
type unplacedCollector struct {
	queue *queue.Queue
	desc  *prometheus.Desc
}

func newUnplacedCollector(q *queue.Queue) *unplacedCollector {
	return &unplacedCollector{queue: q,
		desc: prometheus.NewDesc(Namespace+"_queue_unplaced_total", HelpQueueUnplaced, []string{"pool"}, nil)}
}

func (c *unplacedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *unplacedCollector) Collect(ch chan<- prometheus.Metric) {
	byLabel := map[string]uint64{}
	for pool, n := range c.queue.UnplacedByPool() {
		byLabel[lifecycle.PoolLabel(pool)] += n
	}
	for pool, n := range byLabel {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n), pool)
	}
}
