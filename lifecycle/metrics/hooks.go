package metrics

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
)

// TrackerCalls returns the observer for one project's tracker transport
// (trackerhttp.Options.Observer). Each project has its own credentials and
// so its own rate-limit window; calls are counted per platform. The quota
// gauge appears only once the tracker has reported a quota: a tracker that
// sends no rate-limit headers must not look like one with none left.
func (m *Metrics) TrackerCalls(platform, project string) trackerhttp.CallObserver {
	return trackerCalls{m: m, platform: platform, project: project}
}

type trackerCalls struct {
	m                 *Metrics
	platform, project string
}

func (t trackerCalls) ObserveCall(c trackerhttp.Call) {
	code := "error"
	if c.Status != 0 {
		code = strconv.Itoa(c.Status)
	}
	t.m.trackerCalls.WithLabelValues(t.platform, c.Method, code).Inc()
	t.m.trackerDuration.WithLabelValues(t.platform).Observe(c.Duration.Seconds())
	if c.Remaining >= 0 {
		t.m.rateRemaining.WithLabelValues(t.platform, t.project).Set(float64(c.Remaining))
	}
}

// ObserveDelivery implements receiver.DeliveryObserver.
func (m *Metrics) ObserveDelivery(platform string, status int) {
	m.webhooks.WithLabelValues(platform, strconv.Itoa(status)).Inc()
}

// ObserveAuth implements receiver.AuthObserver: a project whose deliveries
// are rejected shows here by reason, so an alert can name the secret to fix.
func (m *Metrics) ObserveAuth(platform, project, result string) {
	m.webhookAuth.WithLabelValues(platform, project, result).Inc()
}

// RefusedConnection counts a connection the webhook listener refused;
// reason is the cap ("total", "per_address"), never the address, so a
// flood cannot create series.
func (m *Metrics) RefusedConnection(reason string) {
	m.connsRefused.WithLabelValues(reason).Inc()
}

// EgressRefused counts a connection or request of a project's sandboxed
// run that the egress proxy refused; reason is a small fixed set, never
// the host, so a pipeline cannot create series.
func (m *Metrics) EgressRefused(project, reason string) {
	m.egressRefused.WithLabelValues(project, reason).Inc()
}

// LimitKill counts a sandboxed run a limit ended ("memory", "processes").
func (m *Metrics) LimitKill(project, limit string) {
	m.limitKills.WithLabelValues(project, limit).Inc()
}

// WatchLease reports lease as held (1) whenever valid says this replica may
// act as its leader, read at scrape time. Watching a name again replaces
// the previous function.
func (m *Metrics) WatchLease(lease string, valid func() bool) { m.leases.watch(lease, valid) }

// leaseCollector emits agentsmith_lease_held{lease} for every watched lease.
type leaseCollector struct {
	desc *prometheus.Desc

	mu     sync.Mutex
	leases map[string]func() bool
}

func newLeaseCollector() *leaseCollector {
	return &leaseCollector{
		desc: prometheus.NewDesc(Namespace+"_lease_held",
			"1 while this replica holds the leader lease (poller, housekeeping) and may act on it.", []string{"lease"}, nil),
		leases: map[string]func() bool{},
	}
}

func (c *leaseCollector) watch(lease string, valid func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leases[lease] = valid
}

func (c *leaseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *leaseCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for lease, valid := range c.leases {
		v := 0.0
		if valid() {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, lease)
	}
}

// RedisHook counts failed Redis commands; add it with rdb.AddHook.
func (m *Metrics) RedisHook() redis.Hook { return redisHook{errs: m.redisErrors} }

type redisHook struct{ errs *prometheus.CounterVec }

func (h redisHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if failed(err) {
			h.errs.WithLabelValues("dial").Inc()
		}
		return conn, err
	}
}

func (h redisHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		// The hook sees the error as returned; go-redis stores it on cmd
		// only after the hook chain.
		err := next(ctx, cmd)
		h.count(cmd.Name(), err)
		return err
	}
}

func (h redisHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		perCmd := false
		for _, cmd := range cmds {
			perCmd = perCmd || cmd.Err() != nil
			h.count(cmd.Name(), cmd.Err())
		}
		if !perCmd {
			// A failure no command carries (e.g. the connection broke
			// before any reply was read).
			h.count("pipeline", err)
		}
		return err
	}
}

// count records a failed command. The
// connection handshake (HELLO, CLIENT SETINFO) is left out: go-redis
// tolerates a server too old for parts of it, and so does the daemon.
func (h redisHook) count(name string, err error) {
	name = strings.ToLower(name)
	if name == "hello" || name == "client" || !failed(err) {
		return
	}
	h.errs.WithLabelValues(name).Inc()
}

// failed tells a Redis failure from the answers and aborts that are part of
// normal operation: a missing key (redis.Nil), a caller that gave up
// (shutdown cancels blocking takes) and the NOSCRIPT miss go-redis answers by
// sending the script itself.
func failed(err error) bool {
	return err != nil && !errors.Is(err, redis.Nil) && !errors.Is(err, context.Canceled) &&
		!redis.HasErrorPrefix(err, "NOSCRIPT")
}
