package daemon

import (
	"context"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/internal/projects"
	"github.com/agentsmithd/agentsmithd/internal/statuspage"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/poller"
	"github.com/agentsmithd/agentsmithd/lifecycle/receiver"
	"github.com/agentsmithd/agentsmithd/lifecycle/runbox"
	"github.com/agentsmithd/agentsmithd/pkg/health"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/lease"
	"github.com/agentsmithd/agentsmithd/pkg/runcg"
)

// service is one long-running part of a replica: New builds every one
// (one builder per role below), Run starts them and waits for them.
type service struct {
	name string
	run  func(ctx context.Context) error
}

// buildRoles builds the listeners' handlers and the services of the
// replica's configured roles. Per-project settings are not read here: each
// service reads them from the claim service's lifecycle.Projects.
func (d *Daemon) buildRoles() {
	d.webhooks = d.buildWebhooks()
	d.admin = d.buildAdmin()
	if d.cfg.HasRole(config.RoleConsumer) {
		d.services = append(d.services, d.buildConsumer()...)
	}
	if d.cfg.HasRole(config.RolePoller) {
		d.services = append(d.services, d.buildPoller()...)
	}
	if d.cfg.HasRole(config.RoleHousekeeping) {
		d.services = append(d.services, d.buildHousekeeping())
	}
}

// ready is /readyz: a replica that cannot reach Redis can claim nothing.
func (d *Daemon) ready(ctx context.Context) error { return d.rdb.Ping(ctx).Err() }

// buildWebhooks is the webhook listener's handler (the only one the
// internet should reach): the receivers of every platform and the probes,
// or the probes alone on a replica without the receiver role.
func (d *Daemon) buildWebhooks() http.Handler {
	cfg := d.cfg
	if !cfg.HasRole(config.RoleReceiver) {
		mux := http.NewServeMux()
		health.Register(mux, d.ready)
		return mux
	}
	d.receiver = receiver.New(d.rdb, d.claims, d.routes, receiver.Config{Gate: d.gate, MaxBody: cfg.Webhook.MaxBodyBytes,
		BodyTimeout: cfg.Webhook.BodyTimeout, DeliveryTTL: cfg.Webhook.DeliveryTTL, Logger: d.log, Deliveries: d.metrics})
	return d.receiver.Handler()
}

// buildAdmin is the admin listener's handler: /metrics, the status page and
// the probes. Every request is authenticated, loopback included, since a
// pipeline runs on the same host: the status page takes the token as a
// bearer token or a login session (internal/statuspage), everything else
// the bearer token alone (Prometheus scrapes so; the probes Kubernetes
// uses are on the webhook listener). Before that, AllowHosts refuses a
// Host header naming another site (DNS rebinding).
func (d *Daemon) buildAdmin() http.Handler {
	cfg := d.cfg
	rest := http.NewServeMux()
	health.Register(rest, d.ready)
	rest.Handle("GET /metrics", d.metrics.Handler())
	admin := http.NewServeMux()
	admin.Handle("/", statuspage.RequireToken(d.statusToken, rest))
	status := statuspage.New(statuspage.Config{RDB: d.rdb, Queue: d.queue, Projects: d.projects, Instance: cfg.InstanceID,
		HeartbeatTTL: cfg.Consumer.HeartbeatTTL, RestartGrace: d.restartGrace(), Token: d.statusToken, Logger: d.log,
		LogRoots: []string{cfg.Consumer.Output.LogsDir}, Claims: d.claims, Gate: d.gate})
	for _, route := range []string{"GET /status", "GET /status.json", "GET /status/logs", "GET /status/ticket",
		"POST /status/login", "POST /status/logout", "POST /status/action"} {
		admin.Handle(route, status)
	}
	return statuspage.AllowHosts(cfg.Status.Hosts, admin)
}

// buildConsumer is the executor, which takes requests and runs pipelines,
// and the retention of the run logs and work dirs it leaves.
func (d *Daemon) buildConsumer() []service {
	c := d.cfg.Consumer
	// The executor takes only from its pools' queues; it hands back and
	// retries a request into the request's own pool.
	exec := consumer.NewExecutor(d.rdb, d.queue.Serving(c.PoolNames()...), d.projects, consumer.ExecutorConfig{
		Instance: d.cfg.InstanceID, Concurrency: c.Concurrency,
		HeartbeatTTL: c.HeartbeatTTL, HeartbeatRenew: c.HeartbeatRenew,
		ShutdownGrace: c.ShutdownGrace, KillGrace: c.KillGrace,
		WorkDir: c.WorkDir, TailBytes: c.TailBytes,
		LogsDir: c.Output.LogsDir, LogMaxBytes: c.Output.LogMaxBytes, CancelCheck: c.CancelCheck, Labels: d.labels(),
		Liveness: d.presence, Logger: d.log.Named("executor"), Observer: d.observer,
		LimitDelay: c.LimitDelay, Guard: d.guard, RestartGrace: d.takeGrace(), Cgroups: d.limitCgroups(d.runCgroups()),
		Sandbox: d.sandbox, SandboxOff: !d.cfg.Sandbox.On(),
	})
	ret := housekeeping.NewRetention(d.rdb, housekeeping.RetentionConfig{WorkDir: c.WorkDir, LogsDir: c.Output.LogsDir, MaxAge: c.Output.Retention.MaxAge,
		MaxBytes: c.Output.Retention.MaxBytes, Interval: c.Output.Retention.Interval, Logger: d.log.Named("retention")})
	return []service{{"executor", exec.Run}, {"retention", ret.Run}}
}

// runCgroups detects whether each pipeline can run in a cgroup of its own
// and says which bound on a run's processes holds.
func (d *Daemon) runCgroups() *runcg.Parent {
	cg, err := runcg.Detect()
	if err == nil {
		// The cgroup holds a process only while that process cannot write
		// to another cgroup's cgroup.procs: one of the daemon's own user
		// can (the delegated cgroup is the daemon's), one of run_as cannot.
		d.log.Info("pipelines run in a cgroup each: every process a run starts is killed with it, "+
			"except that a pipeline without pipeline.run_as runs as the daemon's user and can move itself out of its cgroup",
			zap.String("cgroup", cg.Dir()))
		return cg
	}
	if d.guard != nil {
		d.log.Warn("no cgroup per run: a run's processes are killed through its process group and its guard's subreaper; "+
			"one that left the group survives should the guard itself be killed (give the daemon a delegated cgroup v2: systemd Delegate=yes)",
			zap.Error(err))
	} else {
		d.log.Warn("no cgroup per run and no run guard: only a run's process group is killed with it (setsid escapes it)",
			zap.Error(err))
	}
	return nil
}

// limitCgroups readies cg for the sandbox's limits: controllers enabled
// where cgroup v2 delegates them, and the limits no controller can hold
// named once and left out of every run (a run would otherwise fail to
// start). Without a sandbox, or without run cgroups, it changes nothing.
func (d *Daemon) limitCgroups(cg *runcg.Parent) *runcg.Parent {
	if d.sandbox == nil {
		return cg
	}
	if cg == nil {
		d.sandbox.Controllers = runbox.Controllers{}
		d.log.Warn("sandbox limits (memory, processes, cpu) do not hold: no cgroup per run (give the daemon a delegated cgroup v2: systemd Delegate=yes)")
		return nil
	}
	if err := cg.EnableLimits(); err != nil {
		d.log.Warn("enable cgroup controllers for the sandbox's limits", zap.Error(err))
	}
	mem, pids, cpu, where := cg.Controllers()
	d.sandbox.Controllers = runbox.Controllers{Memory: mem, Processes: pids, CPU: cpu}
	if !mem || !pids || !cpu {
		d.log.Warn("some sandbox limits do not hold on this host and are left out of every run", zap.String("cgroups", where))
	}
	return cg
}

// restartGrace is how long after a Redis restart this replica's executor
// takes no run and its StaleJobDetector reverts nothing: the longest its
// runs take to find a lost heartbeat, by the guard's checks when pipelines
// run under one.
func (d *Daemon) restartGrace() time.Duration {
	var check time.Duration
	if d.guard != nil {
		check = d.cfg.Consumer.GuardCheck
	}
	return lifecycle.RestartGrace(d.cfg.Consumer.HeartbeatRenew, check)
}

// takeGrace is the executor's restart grace: none on a Redis the caller
// started for this daemon alone (Options.OwnRedis).
func (d *Daemon) takeGrace() time.Duration {
	if d.ownRedis {
		return 0
	}
	return d.restartGrace()
}

// buildPoller is the poller under its leader lease, or nothing when no
// project polls: such a replica does not contend for the lease.
func (d *Daemon) buildPoller() []service {
	poller := poller.NewPoller(d.claims, d.log)
	poller.SetDecider(d.gate)
	if !poller.Polls() && !projects.AnyPolls(d.configured) {
		// Neither a project served now nor a discovered block that may
		// find repositories later polls.
		return nil
	}
	l := d.lease(config.RolePoller, d.cfg.Poller.LeaseTTL)
	return []service{{config.RolePoller, func(ctx context.Context) error {
		return l.Run(ctx, func(lctx context.Context) { _ = poller.Run(lctx) })
	}}}
}

// buildHousekeeping is every repair service under the housekeeping lease:
// they run on the leader only, and each write is fenced by the lease.
func (d *Daemon) buildHousekeeping() service {
	hk := d.cfg.Housekeeping
	l := d.lease(config.RoleHousekeeping, hk.LeaseTTL)
	stale := housekeeping.NewStaleJobDetector(d.rdb, d.claims, housekeeping.StaleJobDetectorConfig{
		FastInterval: hk.FastInterval, SlowInterval: hk.SlowInterval, Fence: l.Fence, Logger: d.log,
		RestartGrace: d.restartGrace()})
	recon := housekeeping.NewEnqueuedReconciler(d.rdb, d.queue, d.claims, housekeeping.EnqueuedReconcilerConfig{
		FastInterval: hk.FastInterval, SlowInterval: hk.SlowInterval, Grace: hk.EnqueuedGrace, Fence: l.Fence, Logger: d.log})
	services := []func(context.Context) error{
		stale.Run,
		recon.Run,
		housekeeping.NewEpochWatcher(d.rdb, housekeeping.EpochWatcherConfig{Interval: hk.FastInterval, Fence: l.Fence, Logger: d.log},
			stale.Kick, recon.Kick).Run,
		housekeeping.NewTriggerSweeper(d.claims, housekeeping.TriggerSweeperConfig{
			Interval: hk.SlowInterval, Fence: l.Fence, Logger: d.log}).Run,
		housekeeping.NewDelayedPromoter(d.queue, housekeeping.DelayedPromoterConfig{
			Interval: hk.DelayedInterval, Fence: l.Fence, Logger: d.log}).Run,
		housekeeping.NewCancelDetector(d.rdb, d.claims, housekeeping.CancelDetectorConfig{
			Interval: hk.SlowInterval, Fence: l.Fence, Logger: d.log}).Run,
		housekeeping.NewStuckDetector(d.rdb, d.queue, d.claims, housekeeping.StuckDetectorConfig{
			Interval: hk.SlowInterval, Fence: l.Fence, Logger: d.log}).Run,
		housekeeping.NewLabelRepairer(d.rdb, d.claims, housekeeping.LabelRepairerConfig{
			Interval: hk.SlowInterval, Fence: l.Fence, Logger: d.log}).Run,
		housekeeping.NewGateKeeper(d.claims, d.gate, housekeeping.GateKeeperConfig{
			Interval: hk.SlowInterval, Fence: l.Fence, Logger: d.log}).Run,
		housekeeping.NewOutcomeWriter(d.rdb, d.claims, housekeeping.OutcomeWriterConfig{
			Interval: hk.FastInterval, Fence: l.Fence, LockTTL: d.cfg.Consumer.HeartbeatTTL, Logger: d.log}).Run,
	}
	return service{config.RoleHousekeeping, func(ctx context.Context) error {
		return l.Run(ctx, func(lctx context.Context) {
			d.log.Info("housekeeping leader")
			var wg sync.WaitGroup
			for _, run := range services {
				wg.Go(func() { _ = run(lctx) })
			}
			wg.Wait()
		})
	}}
}

// lease is the leader lease of one single-replica role, watched by the
// agentsmith_leader metric.
func (d *Daemon) lease(role string, ttl time.Duration) *lease.Lease {
	l := lease.New(d.rdb, lease.Config{Key: keys.Leader(role), Instance: d.cfg.InstanceID,
		TTL: ttl, Logger: d.log.Named("lease." + role)})
	d.metrics.WatchLease(role, l.Valid)
	return l
}
