package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// pausedCollector emits agentsmith_project_paused{project} 1 for each
// project whose queue is paused (agentsmith:paused:*), read at scrape time
// like stateCollector, so an alert can catch a pause someone forgot.
type pausedCollector struct {
	rdb  redis.UniversalClient
	log  *zap.Logger
	desc *prometheus.Desc
}

func newPausedCollector(rdb redis.UniversalClient, log *zap.Logger) *pausedCollector {
	return &pausedCollector{rdb: rdb, log: log, desc: prometheus.NewDesc(Namespace+"_project_paused",
		"1 for each project whose queue is paused (agentsmithctl pause): its requests wait, no run starts.", []string{"project"}, nil)}
}

func (c *pausedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *pausedCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
	defer cancel()
	ps, err := lifecycle.PausedProjects(ctx, c.rdb)
	if err != nil {
		c.log.Warn("metrics: read paused projects", zap.Error(err))
		return
	}
	for _, p := range ps {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, p.Project)
	}
}
