package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle/ops"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/redisconn"
)

// stateTimeout bounds the Redis reads of one scrape.
const stateTimeout = 2 * time.Second

// Help texts of the queue gauges: what each counts (exported so tests
// compare whole scrapes without repeating them).
const (
	HelpQueueDepth     = "PipelineRequests waiting on every priority level of the queue (agentsmith:queue:jobs and agentsmith:queue:jobs:priority:*); not delayed or taken ones."
	HelpQueueOldestAge = "Longest wait since enqueued_at among the head of every priority level and the delayed set (a retry's backoff does not count); 0 when none."
	HelpQueueDelayed   = "Requests waiting out a retry backoff or a concurrency limit (agentsmith:queue:delayed)."
	// HelpOutcomesWaiting and HelpOutcomeOldestAge: runs whose pipeline
	// ended and whose Done or Failed the tracker has not taken yet.
	HelpOutcomesWaiting  = "Runs whose pipeline ended and whose outcome waits for the tracker (entries of agentsmith:outcomes); each is written from its record when the tracker answers, never by running the pipeline again."
	HelpOutcomeOldestAge = "How long the oldest outcome in agentsmith:outcomes has waited for the tracker since its pipeline ended; 0 when none."
	// HelpPoolConsumers and HelpPoolUnserved: a pool whose requests no
	// live replica takes (consumer.pools) shows as consumers 0 and
	// unserved > 0.
	HelpPoolConsumers = "Live replicas whose consumers take from the pool (consumer.pools in their liveness record), per pool the config or a live replica names."
	HelpPoolUnserved  = "Requests waiting in the pool's queue while no live replica serves the pool; 0 while one does."
)

// stateCollector reads the fleet's shared state from Redis at scrape time:
// every replica reports the same values, so dashboards take max() over them.
// When Redis does not answer, these series are left out of the scrape (the
// failure shows in agentsmith_redis_errors_total) rather than reported as 0.
type stateCollector struct {
	rdb   redis.UniversalClient
	queue *queue.Queue
	clock func() time.Time
	log   *zap.Logger

	depth, oldest, delayed, inflight, instances *prometheus.Desc
	outcomes, outcomeAge                        *prometheus.Desc
	poolConsumers, poolUnserved                 *prometheus.Desc
}

func newStateCollector(rdb redis.UniversalClient, q *queue.Queue, clock func() time.Time, log *zap.Logger) *stateCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(Namespace+"_"+name, help, nil, nil)
	}
	return &stateCollector{rdb: rdb, queue: q, clock: clock, log: log,
		depth:         d("queue_depth", HelpQueueDepth),
		oldest:        d("queue_oldest_age_seconds", HelpQueueOldestAge),
		delayed:       d("queue_delayed", HelpQueueDelayed),
		inflight:      d("runs_inflight", "Pipelines running fleet-wide (entries of agentsmith:inflight)."),
		instances:     d("instances_live", "Replicas whose liveness key is present."),
		outcomes:      d("outcomes_waiting", HelpOutcomesWaiting),
		outcomeAge:    d("outcome_oldest_wait_seconds", HelpOutcomeOldestAge),
		poolConsumers: prometheus.NewDesc(Namespace+"_pool_consumers", HelpPoolConsumers, []string{"pool"}, nil),
		poolUnserved:  prometheus.NewDesc(Namespace+"_pool_queued_unserved", HelpPoolUnserved, []string{"pool"}, nil),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.depth, c.oldest, c.delayed, c.inflight, c.instances, c.outcomes, c.outcomeAge,
		c.poolConsumers, c.poolUnserved} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
	defer cancel()
	q, err := ops.ReadQueue(ctx, c.queue, c.clock())
	if err != nil {
		c.log.Warn("metrics: read queue state", zap.Error(err))
		return
	}
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	gauge(c.depth, float64(q.Depth))
	gauge(c.oldest, float64(q.OldestAgeMS)/1000)
	gauge(c.delayed, float64(q.Delayed))
	if n, err := runstate.Count(ctx, c.rdb).Result(); err != nil {
		c.log.Warn("metrics: count runs in flight", zap.Error(err))
	} else {
		gauge(c.inflight, float64(n))
	}
	if outs, _, err := runstate.ReadOutcomes(ctx, c.rdb); err != nil {
		c.log.Warn("metrics: read waiting outcomes", zap.Error(err))
	} else {
		gauge(c.outcomes, float64(len(outs)))
		age := 0.0
		if len(outs) > 0 {
			age = outs[0].Age(c.clock()).Seconds()
		}
		gauge(c.outcomeAge, age)
	}
	if pools, err := ops.ReadPools(ctx, c.rdb, c.queue); err != nil {
		c.log.Warn("metrics: read pools", zap.Error(err))
	} else {
		for _, p := range pools {
			ch <- prometheus.MustNewConstMetric(c.poolConsumers, prometheus.GaugeValue, float64(len(p.Consumers)), p.Name)
			unserved := 0.0
			if p.Unserved() {
				unserved = float64(p.Waiting)
			}
			ch <- prometheus.MustNewConstMetric(c.poolUnserved, prometheus.GaugeValue, unserved, p.Name)
		}
	}
	if n, err := c.countInstances(ctx); err != nil {
		c.log.Warn("metrics: count live instances", zap.Error(err))
	} else {
		gauge(c.instances, float64(n))
	}
}

// countInstances SCANs the liveness keys on every master: a handful per
// fleet, so a scan is cheap and needs no index of its own.
func (c *stateCollector) countInstances(ctx context.Context) (int, error) {
	ks, err := redisconn.ScanKeys(ctx, c.rdb, keys.InstancePattern())
	return len(ks), err
}
