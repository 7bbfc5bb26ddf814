// Package metrics turns what a replica does into Prometheus series: every
// lifecycle.Event (transitions, claim outcomes, repairs, stuck flags, flow
// times), the Redis-held queue and run state read at scrape time, tracker
// API calls with the quota left, webhook answers, lease ownership and Redis
// errors. It owns one prometheus.Registry per Metrics, never the global one,
// so several daemons (or tests) in one process keep their series apart.
//
// Label values come only from bounded sets (configured platforms and
// projects, lifecycle states, outcome names, HTTP methods and codes), never
// from ticket ids, so the series count does not grow with traffic.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/internal/buildinfo"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
)

// Namespace prefixes every series this package registers.
const Namespace = "agentsmith"

// Histogram buckets, in seconds. Pipelines run for minutes (the default
// timeout is 30 min); queue waits are sub-second when consumers keep up and
// minutes when they do not; lead time spans a run plus its retries.
var (
	PipelineBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600}
	WaitBuckets     = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 5, 15, 30, 60, 300, 900}
	LeadBuckets     = []float64{1, 10, 30, 60, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400}
	// ApprovalBuckets: a person answers an approval gate in minutes, or
	// after a night or a weekend.
	ApprovalBuckets = []float64{60, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400, 172800, 604800}
)

// Config configures New. Zero values take defaults.
type Config struct {
	// Redis, when set, is read at scrape time for the queue depth and age,
	// delayed requests, in-flight runs and live instances.
	Redis redis.UniversalClient
	// Queue is the queue with the fleet's layout (projects.Queue), whose
	// every level and delayed set the queue gauges count; required with
	// Redis.
	Queue *queue.Queue
	// Clock is the time source for the queue's oldest age; default time.Now.
	Clock func() time.Time
	// Logger receives scrape-time Redis failures; default zap.NewNop().
	Logger *zap.Logger
}

// Metrics is one replica's instrumentation. It implements
// lifecycle.Observer; its methods are safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	transitions *prometheus.CounterVec
	claims      *prometheus.CounterVec
	repairs     *prometheus.CounterVec
	stuck       *prometheus.CounterVec
	retriggers  *prometheus.CounterVec
	refusals    *prometheus.CounterVec
	pipeline    *prometheus.HistogramVec
	wait        *prometheus.HistogramVec
	lead        *prometheus.HistogramVec
	stage       *prometheus.HistogramVec
	approval    *prometheus.HistogramVec

	trackerCalls    *prometheus.CounterVec
	trackerDuration *prometheus.HistogramVec
	rateRemaining   *prometheus.GaugeVec
	webhooks        *prometheus.CounterVec
	webhookAuth     *prometheus.CounterVec
	connsRefused    *prometheus.CounterVec
	egressRefused   *prometheus.CounterVec
	limitKills      *prometheus.CounterVec
	redisErrors     *prometheus.CounterVec
	leases          *leaseCollector
}

var _ lifecycle.Observer = (*Metrics)(nil)

// New registers every series on a fresh registry, together with the Go
// runtime and process collectors.
func New(cfg Config) *Metrics {
	if cfg.Clock == nil {
		cfg.Clock = wallclock.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		transitions: counter("transitions_total",
			"Lifecycle transitions written (or, for re-pushed, stood in for), by outcome.",
			"platform", "project", "from", "to", "outcome"),
		claims: counter("claims_total",
			"Claim attempts by outcome: claimed, already_claimed, not_eligible, precondition_failed, refused, backing_off.",
			"platform", "project", "source", "outcome"),
		repairs: counter("repairs_total",
			"Housekeeping repairs: reverted, re-pushed, attempts exhausted, requeued dead instances' requests.",
			"kind"),
		stuck: counter("stuck_total",
			"Tickets flagged as staying Enqueued or InProgress longer than their project's threshold.",
			"platform", "project", "state"),
		retriggers: counter("retriggers_total",
			"Claims of tickets that had reached done or failed before: someone asked for another run.",
			"platform", "project"),
		refusals: counter("tracker_refusals_total",
			"Tracker writes refused for good (a 4xx that asking again gets again), by what was written (claim, transition, repair) and the status.",
			"platform", "op", "status"),
		pipeline: histogram("pipeline_duration_seconds",
			"How long pipelines ran, by how the run ended (succeeded, failed, handed back).",
			PipelineBuckets, "project", "outcome"),
		wait: histogram("queue_wait_seconds",
			"How long requests waited between the claim and the pipeline start.",
			WaitBuckets, "project"),
		lead: histogram("lead_time_seconds",
			"Time from the claim to the ticket's terminal state (done or failed).",
			LeadBuckets, "project", "state"),
		stage: histogram("stage_duration_seconds",
			"How long a staged project's stage attempts ran, by stage (pipeline.stages names, bounded by the config) and how the attempt ended (as pipeline_duration_seconds).",
			PipelineBuckets, "project", "stage", "outcome"),
		approval: histogram("approval_wait_seconds",
			"How long tickets awaited approval at a gate, from the park to the decision or deadline that moved them on, by the gated stage and the decision (approved, rejected, failed: rejected past max_rejections, cancelled, timed out).",
			ApprovalBuckets, "project", "stage", "decision"),
		trackerCalls: counter("tracker_requests_total",
			"Tracker API requests sent, by HTTP method and status code (\"error\": no response).",
			"platform", "method", "code"),
		trackerDuration: histogram("tracker_request_duration_seconds",
			"Tracker API request latency, rate-limit retries counted separately.",
			prometheus.DefBuckets, "platform"),
		rateRemaining: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "tracker_rate_limit_remaining",
			Help: "Requests the tracker last reported left in the current rate-limit window for a project's credentials."},
			[]string{"platform", "project"}),
		webhooks: counter("webhook_requests_total",
			"Webhook requests answered, by platform (\"unknown\" for unconfigured ones) and status code.",
			"platform", "code"),
		webhookAuth: counter("webhook_auth_total",
			"Webhook deliveries authenticated or rejected, by project (\"\" when a rejection names none) and result (authenticated, or the reason: no_signature, malformed_signature, wrong_secret, other_project_secret).",
			"platform", "project", "result"),
		connsRefused: counter("webhook_connections_refused_total",
			"Connections the webhook listener closed at once for being over its total or per-address cap.",
			"reason"),
		egressRefused: counter("sandbox_egress_refused_total",
			"Connections and requests of sandboxed runs the egress proxy refused, by project and reason (not_allowed, address, method, interception).",
			"project", "reason"),
		limitKills: counter("sandbox_limit_kills_total",
			"Sandboxed runs a limit ended, by project and limit (memory, processes).",
			"project", "limit"),
		redisErrors: counter("redis_errors_total",
			"Redis commands that failed (redis.Nil, cancellations and script cache misses are not failures).",
			"command"),
		leases: newLeaseCollector(),
	}
	bi := buildinfo.Get()
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "build_info",
		Help: "Always 1; its labels name the running build (version, commit, Go version)."},
		[]string{"version", "commit", "goversion"})
	build.WithLabelValues(bi.Version, bi.Commit, bi.GoVersion).Set(1)
	m.reg.MustRegister(build)
	m.reg.MustRegister(m.transitions, m.claims, m.repairs, m.stuck, m.retriggers, m.refusals, m.pipeline, m.wait, m.lead, m.stage, m.approval,
		m.trackerCalls, m.trackerDuration, m.rateRemaining, m.webhooks, m.webhookAuth, m.connsRefused, m.egressRefused, m.limitKills, m.redisErrors, m.leases,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if cfg.Redis != nil {
		if cfg.Queue == nil {
			panic("metrics: Config.Redis is set without Config.Queue")
		}
		m.reg.MustRegister(newStateCollector(cfg.Redis, cfg.Queue, cfg.Clock, cfg.Logger), newProjectCollector(cfg.Redis, cfg.Logger))
	}
	if cfg.Queue != nil {
		m.reg.MustRegister(newUnplacedCollector(cfg.Queue))
	}
	return m
}

func counter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
}

func histogram(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets}, labels)
}

// Registry is the registry every series lives on (tests gather it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text (or OpenMetrics)
// format. At most a few scrapes run at once, so a scraper storm cannot pile
// Redis reads onto the replica.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		Registry:            m.reg,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	})
}

// repairOwners are the housekeeping services; every change they make is a
// repair.
var repairOwners = map[lifecycle.Owner]bool{
	lifecycle.OwnerStaleJobDetector:   true,
	lifecycle.OwnerEnqueuedReconciler: true,
	lifecycle.OwnerLabelRepairer:      true,
}

// outcomeAttemptsExhausted is the transition outcome of a ticket failed
// because its attempts ran out, by whichever component noticed.
const outcomeAttemptsExhausted = "attempts exhausted"

// Observe implements lifecycle.Observer. It only updates in-memory series:
// it never blocks.
func (m *Metrics) Observe(ev lifecycle.Event) {
	platform, project := ev.Ref.Platform, ev.Ref.Project
	switch ev.Kind {
	case lifecycle.EventTransition:
		m.transitions.WithLabelValues(platform, project, ev.From.String(), ev.To.String(), ev.Outcome).Inc()
		if ev.Outcome == string(lifecycle.Claimed) {
			m.claims.WithLabelValues(platform, project, ev.Source, ev.Outcome).Inc()
			if ev.Retrigger {
				m.retriggers.WithLabelValues(platform, project).Inc()
			}
		}
		if repairOwners[ev.Owner] || ev.Outcome == outcomeAttemptsExhausted {
			m.repairs.WithLabelValues(ev.Outcome).Inc()
		}
		if ev.To == lifecycle.InProgress && ev.Wait > 0 {
			m.wait.WithLabelValues(project).Observe(ev.Wait.Seconds())
		}
		if ev.Run > 0 {
			m.pipeline.WithLabelValues(project, ev.Outcome).Observe(ev.Run.Seconds())
			if ev.Stage != "" {
				m.stage.WithLabelValues(project, ev.Stage, ev.Outcome).Observe(ev.Run.Seconds())
			}
		}
		if ev.From == lifecycle.AwaitingApproval && ev.ApprovalWait > 0 {
			m.approval.WithLabelValues(project, ev.Stage, ev.Outcome).Observe(ev.ApprovalWait.Seconds())
		}
		if ev.Lead > 0 && ev.To.Terminal() {
			m.lead.WithLabelValues(project, ev.To.String()).Observe(ev.Lead.Seconds())
		}
	case lifecycle.EventClaim:
		m.claims.WithLabelValues(platform, project, ev.Source, ev.Outcome).Inc()
	case lifecycle.EventRepair:
		m.repairs.WithLabelValues(ev.Outcome).Inc()
	case lifecycle.EventStuck:
		m.stuck.WithLabelValues(platform, project, ev.From.String()).Inc()
	case lifecycle.EventRefusal:
		m.refusals.WithLabelValues(platform, ev.Op, strconv.Itoa(ev.Status)).Inc()
	}
}
