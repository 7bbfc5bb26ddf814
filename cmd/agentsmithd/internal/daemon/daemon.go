// Package daemon composes one agentsmithd replica from its config: the
// receiver, poller, consumer and housekeeping roles, the leader leases that
// keep the poller and housekeeping on a single replica, and the presence key
// that lets other replicas see this one die.
package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/discovery"
	"github.com/agentsmithd/agentsmithd/internal/projects"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/gate"
	"github.com/agentsmithd/agentsmithd/lifecycle/metrics"
	"github.com/agentsmithd/agentsmithd/lifecycle/receiver"
	"github.com/agentsmithd/agentsmithd/lifecycle/runbox"
	"github.com/agentsmithd/agentsmithd/lifecycle/runguard"
	"github.com/agentsmithd/agentsmithd/pkg/connlimit"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/outage"
	"github.com/agentsmithd/agentsmithd/pkg/presence"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Daemon is one replica.
type Daemon struct {
	sandbox  *runbox.Config // nil: runs are not sandboxed
	cfg      *config.Config
	rdb      redis.UniversalClient
	guard    *runguard.Launcher // nil: pipelines run unguarded
	ownRedis bool               // Options.OwnRedis
	log      *zap.Logger
	// trackerOutages follows each project's tracker and token outages
	// (pkg/outage), told by its tracker calls.
	trackerOutages *outage.Trackers
	projects       *lifecycle.ProjectSet
	observer       lifecycle.Observers
	metrics        *metrics.Metrics
	audit          *audit.Writer // nil when audit.enabled is false
	claims         *claim.Service
	gate           *gate.Gate // the ApprovalGate: decides tickets awaiting approval
	queue          *queue.Queue
	presence       *presence.Presence
	routes         []receiver.Route

	// What discovery changes while the replica runs (discovered.go):
	// served holds every project built, watched or retired, by name;
	// decoders the webhook decoder of each platform. Only New and
	// applyDiscovered, which the Refresher calls from one goroutine, touch
	// them.
	served    map[string]servedProject
	decoders  map[string]platforms.WebhookDecoder
	refresher *discovery.Refresher // nil: no project is discovered
	// configured are the projects before discovery (Options.Configured).
	configured []config.Project

	// statusToken authenticates every request to the admin listener:
	// status.token, or one of this process's own when the config has none
	// (serve puts the token file's in the config first).
	statusToken string

	// Built by New (roles.go), started by Run.
	webhooks http.Handler
	admin    http.Handler
	receiver *receiver.Receiver // nil without the receiver role
	services []service

	mu        sync.Mutex
	addr      string
	adminAddr string
	listened  chan struct{}
}

// Options carries what the config cannot: injected clients and logger.
type Options struct {
	Logger *zap.Logger
	// Redis, when set, is used instead of dialing cfg.Redis (embedded Redis).
	// The daemon adds its error-counting hook to it: give each daemon its
	// own client, or their agentsmith_redis_errors_total count each other's.
	Redis redis.UniversalClient
	// Observer, when set, receives every lifecycle event besides the
	// daemon's own observers (the demo prints them).
	Observer lifecycle.Observer
	// GuardExe, when set, is the agentsmithd binary: every pipeline then
	// runs under `GuardExe guard` (lifecycle/runguard). Tests that run the
	// daemon inside the test binary leave it empty.
	GuardExe string
	// SandboxExe, when set with sandbox.mode on, is the sandbox's init
	// binary (the agentsmithd binary, where every uid may run it): every
	// pipeline then runs in a sandbox of its own. SandboxHide are the
	// daemon's files no run may see (config, secret files, status token).
	// Tests that run the daemon inside the test binary leave it empty.
	SandboxExe  string
	SandboxHide []string
	// OwnRedis says the caller started Redis itself, for this daemon, just
	// before (the demo, tests of the daemon inside the test binary): no run
	// predates it, so the executor need not wait out the restart grace
	// (lifecycle.RestartGrace) on it. The StaleJobDetector still does.
	OwnRedis bool
	// Configured are the projects as the config wrote them, before
	// discovery expanded cfg.Projects: when any names its repositories by
	// pattern, group or installation, the replica lists them again while
	// it runs (discovery.interval, and on a repository webhook) and starts
	// or stops serving repositories without a restart.
	Configured []config.Project
	// Now, OutageReminder and OutageProbe drive the outage lines
	// (pkg/outage): the clock (time.Now if nil), the interval between
	// reminders (outage.DefaultReminder if 0), Redis's and the trackers',
	// and between the probes that see Redis come back (defaultOutageProbe
	// if 0). Tests shorten them. Now is also the approval gates' clock,
	// which their deadlines (gate.approval.timeout) are measured on.
	Now            func() time.Time
	OutageReminder time.Duration
	OutageProbe    time.Duration
}

// defaultOutageProbe is how often the replica pings Redis to tell when an
// outage starts and ends.
const defaultOutageProbe = 2 * time.Second

// New builds a replica from cfg. It dials nothing yet.
func New(cfg *config.Config, opts Options) (*Daemon, error) {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	log = log.With(zap.String("instance", cfg.InstanceID))
	// One line when Redis becomes unreachable, a reminder while it stays
	// so, one when it is back: every loop's own error line for it is
	// folded to debug.
	redisOutage := outage.New(outage.Config{What: "redis", Where: strings.Join(cfg.Redis.Addrs, ","),
		Meanwhile: "no ticket is claimed or started and webhooks are answered 503 until it is back; retrying",
		Reminder:  opts.OutageReminder, Now: opts.Now, Log: log.Named("outage")})
	// The same per project for its tracker and its token, told by the
	// project's tracker calls (buildProject). Redis's fold sees a line
	// first: a Redis error starts its outage even while a tracker's is on.
	trackerOutages := outage.NewTrackers(opts.OutageReminder, opts.Now, log.Named("outage"))
	log = log.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return outage.Fold(outage.FoldTrackers(c, trackerOutages), redisOutage, outage.Dialing(cfg.Redis.Addrs...))
	}))
	// Keys are built for the mode before anything runs (pkg/keys).
	if err := keys.UseHashTag(cfg.Redis.Mode == config.RedisCluster); err != nil {
		return nil, fmt.Errorf("redis.mode %s: %w", cfg.Redis.Mode, err)
	}
	rdb := opts.Redis
	if rdb == nil {
		var err error
		if rdb, err = projects.Redis(cfg.Redis, poolSize(cfg)); err != nil {
			return nil, err
		}
	}
	d := &Daemon{cfg: cfg, rdb: rdb, log: log, listened: make(chan struct{}), configured: opts.Configured, ownRedis: opts.OwnRedis,
		statusToken: cfg.Status.Token.Value(), trackerOutages: trackerOutages}
	if d.statusToken == "" {
		d.statusToken = randomToken()
	}
	if opts.GuardExe != "" {
		d.guard = &runguard.Launcher{Exe: opts.GuardExe, Redis: projects.GuardRedis(cfg.Redis), Check: cfg.Consumer.GuardCheck,
			Instance: cfg.InstanceID, Presence: presence.Window(cfg.Housekeeping.InstanceTTL)}
	}
	// One registry per replica: several daemons in one process (tests, the
	// demo) never share series.
	d.queue = projects.Queue(rdb, cfg)
	d.metrics = metrics.New(metrics.Config{Redis: rdb, Queue: d.queue, Logger: log.Named("metrics")})
	if cfg.HasRole(config.RoleConsumer) {
		sb, err := d.sandboxing(opts)
		if err != nil {
			return nil, err
		}
		d.sandbox = sb
		d.logSandbox(sb)
	}
	rdb.AddHook(d.metrics.RedisHook())
	d.observer = append(d.observer, d.metrics)
	if opts.Observer != nil {
		d.observer = append(d.observer, opts.Observer)
	}
	if cfg.Audit.On() {
		d.audit = audit.NewWriter(rdb, audit.WriterConfig{MaxLen: cfg.Audit.MaxLen, Logger: log})
		d.observer = append(d.observer, d.audit)
	}
	d.served = map[string]servedProject{}
	d.decoders = map[string]platforms.WebhookDecoder{}
	watched := lifecycle.Projects{}
	for i := range cfg.Projects {
		pc := &cfg.Projects[i]
		sp, err := d.buildProject(pc)
		if err != nil {
			return nil, fmt.Errorf("projects[%d] (%s): %w", i, pc.Name, err)
		}
		d.served[pc.Name] = sp
		watched[pc.Name] = sp.project
	}
	d.projects = lifecycle.NewProjectSet(watched)
	d.routes = d.buildRoutes()
	if slices.ContainsFunc(opts.Configured, func(p config.Project) bool { return p.Discovered() }) {
		d.refresher = discovery.NewRefresher(discovery.RefresherConfig{RDB: rdb, Projects: opts.Configured,
			Interval: cfg.Discovery.Interval, SignalCheck: cfg.Discovery.SignalCheck, Apply: d.applyDiscovered,
			Logger: log.Named("discovery")})
	}
	var served []string
	if cfg.HasRole(config.RoleConsumer) {
		served = cfg.Consumer.PoolNames()
	}
	d.presence = presence.New(rdb, presence.Config{Key: keys.Instance(cfg.InstanceID),
		Value: lifecycle.Replica{ID: cfg.InstanceID, Pools: served}.Encode(),
		TTL:   cfg.Housekeeping.InstanceTTL, Logger: log.Named("presence")})
	d.claims = claim.NewService(rdb, d.queue, d.projects, claim.Config{
		Instance: cfg.InstanceID, LockTTL: cfg.ClaimLockTTL, Labels: d.labels(), Logger: log.Named("claim"),
		Observer: d.observer,
	})
	d.gate = gate.New(rdb, d.claims, d.queue, gate.Config{Instance: cfg.InstanceID, Clock: opts.Now, Logger: log})
	d.claims.SetParkedCanceller(d.gate)
	d.buildRoles()
	probe := opts.OutageProbe
	if probe <= 0 {
		probe = defaultOutageProbe
	}
	d.services = append(d.services, service{"redis-outage", func(ctx context.Context) error {
		outage.Watch(ctx, redisOutage, probe, func(ctx context.Context) error { return rdb.Ping(ctx).Err() })
		return nil
	}})
	unplaced := &unplacedLog{counts: d.queue.UnplacedByPool, log: log.Named("queue")}
	d.services = append(d.services, service{"unplaced-log", unplaced.run})
	if d.refresher != nil {
		d.services = append(d.services, service{"discovery", d.refresher.Run})
	}
	return d, nil
}

// poolSize leaves room beside the consumer workers, each of which holds a
// connection while it blocks on the queue: with go-redis's default pool (10
// per CPU) a concurrency of 100 left claims and /readyz waiting seconds for
// a free connection (found by the bench's 100-running-pipelines step).
func poolSize(cfg *config.Config) int {
	n := 10 * runtime.GOMAXPROCS(0)
	if cfg.HasRole(config.RoleConsumer) {
		n = max(n, cfg.Consumer.Concurrency+n)
	}
	return n
}

func (d *Daemon) labels() lifecycle.Labels { return lifecycle.Labels{Prefix: d.cfg.LabelPrefix} }

// Claims exposes the claim service (the demo and tests drive it directly).
func (d *Daemon) Claims() *claim.Service { return d.claims }

// Addr is the webhook listener's bound address, once listening.
func (d *Daemon) Addr() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.addr
}

// AdminAddr is the admin listener's bound address (/metrics, /status),
// once listening.
func (d *Daemon) AdminAddr() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.adminAddr
}

// newServer is an HTTP server whose timeouts keep slow clients from
// holding it: headers within 5 s, the whole request within 30 s (a webhook
// body has its own, shorter deadline, webhook.body_timeout).
func newServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 64 << 10}
}

// StatusToken is the token the admin listener requires (status.token, or
// the replica's own when the config has none).
func (d *Daemon) StatusToken() string { return d.statusToken }

// randomToken is a status token for a replica whose config has none: only
// who asks StatusToken (the demo, tests) can then use the admin listener.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// Listening is closed once both HTTP listeners are bound.
func (d *Daemon) Listening() <-chan struct{} { return d.listened }

// Metrics is the replica's instrumentation, served at /metrics on the
// admin listener.
func (d *Daemon) Metrics() *metrics.Metrics { return d.metrics }

// Run starts what New built (the listeners, every role's services, the
// presence key and the audit writer) and runs them until ctx is done, then shuts down
// gracefully: receivers stop, consumers hand back what they could not
// finish, leases are released so another replica takes over at once.
func (d *Daemon) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg := d.cfg
	d.log.Info("starting", zap.Strings("roles", cfg.Roles), zap.Int("projects", len(d.projects.Watched())))
	var wg sync.WaitGroup
	errc := make(chan error, 4)

	presCtx, stopPresence := context.WithCancel(context.WithoutCancel(ctx))
	defer stopPresence()
	presDone := make(chan struct{})
	go func() { defer close(presDone); _ = d.presence.Run(presCtx) }()
	// The audit writer outlives the roles so the events of the shutdown
	// itself (hand-backs) are flushed to the stream.
	auditCtx, stopAudit := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAudit()
	auditDone := make(chan struct{})
	go func() {
		defer close(auditDone)
		if d.audit != nil {
			_ = d.audit.Run(auditCtx)
		}
	}()

	// After the servers drained: wait for the re-claims deliveries started.
	if d.receiver != nil {
		defer d.receiver.Close()
	}
	// Two listeners: the webhook listener (the only one the internet
	// should reach) and the admin listener.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	adminLn, err := net.Listen("tcp", cfg.AdminListen)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("admin_listen %s: %w", cfg.AdminListen, err)
	}
	// One host holding thousands of slow connections must not exhaust the
	// file descriptors Redis, tracker calls and /readyz need.
	ln = connlimit.Wrap(ln, connlimit.Config{Max: cfg.Webhook.MaxConnections, MaxPerAddr: cfg.Webhook.MaxConnectionsPerAddress,
		Refused: func(r connlimit.Reason) { d.metrics.RefusedConnection(string(r)) }})
	d.mu.Lock()
	d.addr, d.adminAddr = ln.Addr().String(), adminLn.Addr().String()
	d.mu.Unlock()
	close(d.listened)
	d.log.Info("listening", zap.String("addr", d.addr), zap.String("admin_addr", d.adminAddr),
		zap.Bool("webhooks", cfg.HasRole(config.RoleReceiver)))
	for _, s := range []struct {
		srv *http.Server
		ln  net.Listener
	}{{newServer(d.webhooks), ln}, {newServer(d.admin), adminLn}} {
		wg.Go(func() {
			if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("http %s: %w", s.ln.Addr(), err)
			}
		})
		context.AfterFunc(ctx, func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = s.srv.Shutdown(sctx)
		})
	}
	for _, svc := range d.services {
		wg.Go(func() {
			if err := svc.run(ctx); err != nil && ctx.Err() == nil {
				d.log.Error("service stopped", zap.String("service", svc.name), zap.Error(err))
			}
		})
	}
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
		cancel()
	}
	wg.Wait()
	stopAudit()
	<-auditDone
	// Presence goes last: its key must outlive every run this replica owns.
	stopPresence()
	<-presDone
	d.log.Info("stopped")
	return runErr
}
