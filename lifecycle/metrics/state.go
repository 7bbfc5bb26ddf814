package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// stateTimeout bounds the Redis reads of one scrape.
const stateTimeout = 2 * time.Second

// stateCollector reads the fleet's shared state from Redis at scrape time:
// every replica reports the same values, so dashboards take max() over them.
// When Redis does not answer, these series are left out of the scrape (the
// failure shows in agentsmith_redis_errors_total) rather than reported as 0.
type stateCollector struct {
	rdb   redis.UniversalClient
	clock func() time.Time
	log   *zap.Logger

	depth, oldest, delayed, inflight, instances *prometheus.Desc
}

func newStateCollector(rdb redis.UniversalClient, clock func() time.Time, log *zap.Logger) *stateCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(Namespace+"_"+name, help, nil, nil)
	}
	return &stateCollector{rdb: rdb, clock: clock, log: log,
		depth:     d("queue_depth", "PipelineRequests waiting in the queue (agentsmith:queue:jobs)."),
		oldest:    d("queue_oldest_age_seconds", "Age of the request at the head of the queue; 0 when empty."),
		delayed:   d("queue_delayed", "Requests waiting out a retry backoff (agentsmith:queue:delayed)."),
		inflight:  d("runs_inflight", "Pipelines running fleet-wide (entries of agentsmith:inflight)."),
		instances: d("instances_live", "Replicas whose liveness key is present."),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.depth, c.oldest, c.delayed, c.inflight, c.instances} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
	defer cancel()
	var llen, zcard, hlen *redis.IntCmd
	var head *redis.StringCmd
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		llen = p.LLen(ctx, keys.Queue())
		head = p.LIndex(ctx, keys.Queue(), 0)
		zcard = p.ZCard(ctx, keys.Delayed())
		hlen = runstate.Count(ctx, p)
		return nil
	})
	if err != nil && err != redis.Nil {
		c.log.Warn("metrics: read queue state", zap.Error(err))
		return
	}
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	gauge(c.depth, float64(llen.Val()))
	gauge(c.inflight, float64(hlen.Val()))
	if zcard.Err() == nil {
		gauge(c.delayed, float64(zcard.Val()))
	}
	age := 0.0
	if b, err := head.Bytes(); err == nil {
		req, err := lifecycle.DecodeRequest(b)
		if err != nil {
			c.log.Warn("metrics: undecodable request at the queue head", zap.Error(err))
		} else if !req.EnqueuedAt.IsZero() {
			age = max(c.clock().Sub(req.EnqueuedAt).Seconds(), 0)
		}
	}
	gauge(c.oldest, age)
	if n, err := c.countInstances(ctx); err != nil {
		c.log.Warn("metrics: count live instances", zap.Error(err))
	} else {
		gauge(c.instances, float64(n))
	}
}

// countInstances SCANs the liveness keys: a handful per fleet, so a scan is
// cheap and needs no index of its own.
func (c *stateCollector) countInstances(ctx context.Context) (int, error) {
	n := 0
	iter := c.rdb.Scan(ctx, 0, keys.InstancePattern(), 100).Iterator()
	for iter.Next(ctx) {
		n++
	}
	return n, iter.Err()
}
