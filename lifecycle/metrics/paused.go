package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// projectCollector emits, per project, read at scrape time like
// stateCollector: agentsmith_project_paused 1 for each project whose queue
// is paused (agentsmith:paused:*), so an alert can catch a pause someone
// forgot; agentsmith_awaiting_approval, the tickets parked at an approval
// gate, counted from the parked index (lifecycle.CountParked: one HVALS),
// never from the tracker.
type projectCollector struct {
	rdb      redis.UniversalClient
	log      *zap.Logger
	paused   *prometheus.Desc
	awaiting *prometheus.Desc
}

func newProjectCollector(rdb redis.UniversalClient, log *zap.Logger) *projectCollector {
	return &projectCollector{rdb: rdb, log: log,
		paused: prometheus.NewDesc(Namespace+"_project_paused",
			"1 for each project whose queue is paused (agentsmithctl pause): its requests wait, no run starts.", []string{"project"}, nil),
		awaiting: prometheus.NewDesc(Namespace+"_awaiting_approval",
			"Tickets parked at an approval gate, waiting for a person's decision, by project (the parked index the status page lists).", []string{"project"}, nil)}
}

func (c *projectCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.paused; ch <- c.awaiting }

func (c *projectCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
	defer cancel()
	if ps, err := lifecycle.PausedProjects(ctx, c.rdb); err != nil {
		c.log.Warn("metrics: read paused projects", zap.Error(err))
	} else {
		for _, p := range ps {
			ch <- prometheus.MustNewConstMetric(c.paused, prometheus.GaugeValue, 1, p.Project)
		}
	}
	counts, err := lifecycle.CountParked(ctx, c.rdb)
	if err != nil {
		c.log.Warn("metrics: count parked tickets", zap.Error(err))
		return
	}
	for project, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.awaiting, prometheus.GaugeValue, float64(n), project)
	}
}
