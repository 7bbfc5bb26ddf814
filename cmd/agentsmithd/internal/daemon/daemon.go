// Package daemon composes one agentsmithd replica from its config: the
// receiver, poller, consumer and housekeeping roles, the leader leases that
// keep the poller and housekeeping on a single replica, and the presence key
// that lets other replicas see this one die.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/receiver"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/lease"
	"github.com/agentsmithd/agentsmithd/pkg/presence"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/azuredevops"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/platforms/gitlab"
	"github.com/agentsmithd/agentsmithd/platforms/jira"
)

// Daemon is one replica.
type Daemon struct {
	cfg      *config.Config
	rdb      redis.UniversalClient
	log      *zap.Logger
	projects lifecycle.Projects
	observer lifecycle.Observers
	claims   *lifecycle.ClaimService
	queue    *queue.Queue
	presence *presence.Presence
	routes   []receiver.Route

	mu       sync.Mutex
	addr     string
	listened chan struct{}
}

// Options carries what the config cannot: injected clients and logger.
type Options struct {
	Logger *zap.Logger
	// Redis, when set, is used instead of dialing cfg.Redis (embedded Redis).
	Redis redis.UniversalClient
	// Observer, when set, receives every lifecycle event besides the
	// daemon's own observers (the demo prints them).
	Observer lifecycle.Observer
}

// New builds a replica from cfg. It dials nothing yet.
func New(cfg *config.Config, opts Options) (*Daemon, error) {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	log = log.With(zap.String("instance", cfg.InstanceID))
	rdb := opts.Redis
	if rdb == nil {
		rdb = redis.NewClient(&redis.Options{
			Addr:     cfg.Redis.Addr,
			Password: cfg.Redis.Password.Value(),
			DB:       cfg.Redis.DB,
			// Short timeouts so a dead Redis is noticed quickly (every loop
			// retries on its own); go-redis's default 3 retries with backoff
			// ride out the dead pooled connections a Redis restart leaves.
			DialTimeout: 2 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second,
		})
	}
	d := &Daemon{cfg: cfg, rdb: rdb, log: log, projects: lifecycle.Projects{}, listened: make(chan struct{})}
	if opts.Observer != nil {
		d.observer = append(d.observer, opts.Observer)
	}
	routes := map[string]*receiver.Route{}
	for i := range cfg.Projects {
		pc := &cfg.Projects[i]
		tr, dec, locator, err := buildTracker(pc, rdb, cfg.InstanceID, cfg.LabelPrefix, log)
		if err != nil {
			return nil, fmt.Errorf("projects[%d] (%s): %w", i, pc.Name, err)
		}
		d.projects[pc.Name] = &lifecycle.Project{
			Name: pc.Name, Platform: pc.Platform, Tracker: tr, TriggerLabel: pc.TriggerLabel,
			Pipeline: lifecycle.Pipeline{Command: pc.Pipeline.Command, Env: pc.Pipeline.Env,
				Timeout: pc.Pipeline.Timeout, MaxAttempts: pc.Pipeline.MaxAttempts},
			RequireNoOpenBlockers: pc.Readiness.RequireNoOpenBlockers,
		}
		r := routes[pc.Platform]
		if r == nil {
			r = &receiver.Route{Platform: pc.Platform, Decoder: dec}
			routes[pc.Platform] = r
		}
		pr := receiver.ProjectRoute{Name: pc.Name, Locator: locator}
		for _, s := range pc.Webhook.Secrets {
			pr.Secrets = append(pr.Secrets, []byte(s.Value()))
		}
		r.Projects = append(r.Projects, pr)
	}
	for _, r := range routes {
		d.routes = append(d.routes, *r)
	}
	d.queue = queue.New(rdb, keys.Queue())
	d.claims = lifecycle.NewClaimService(rdb, d.queue, d.projects, lifecycle.ClaimConfig{
		Instance: cfg.InstanceID, LockTTL: cfg.ClaimLockTTL, Labels: d.labels(), Logger: log.Named("claim"),
		Observer: d.observer,
	})
	d.presence = presence.New(rdb, presence.Config{Key: keys.Instance(cfg.InstanceID), Value: cfg.InstanceID,
		TTL: cfg.Housekeeping.InstanceTTL, Logger: log.Named("presence")})
	return d, nil
}

func buildTracker(pc *config.Project, rdb redis.UniversalClient, instance, prefix string, log *zap.Logger) (platforms.Tracker, platforms.WebhookDecoder, string, error) {
	switch pc.Platform {
	case github.Platform:
		tr, err := github.New(github.Options{BaseURL: pc.BaseURL, Repo: pc.Repo, Project: pc.Name,
			Token: pc.Token.Value(), Logger: log.Named("github"), Writer: instance})
		if err != nil {
			return nil, nil, "", err
		}
		return tr, github.Webhooks{}, tr.Locator(), nil
	case gitlab.Platform:
		tr, err := gitlab.New(gitlab.Options{BaseURL: pc.BaseURL, Repo: pc.Repo, Project: pc.Name,
			Token: pc.Token.Value(), Logger: log.Named("gitlab"), Writer: instance, LabelPrefix: prefix})
		if err != nil {
			return nil, nil, "", err
		}
		return tr, gitlab.Webhooks{}, tr.Locator(), nil
	case azuredevops.Platform:
		tr, err := azuredevops.New(azuredevops.Options{BaseURL: pc.BaseURL, Repo: pc.Repo, Project: pc.Name,
			Token: pc.Token.Value(), Logger: log.Named("azuredevops"), Writer: instance})
		if err != nil {
			return nil, nil, "", err
		}
		return tr, azuredevops.Webhooks{}, tr.Locator(), nil
	case jira.Platform:
		tr, err := jira.New(jira.Options{BaseURL: pc.BaseURL, Repo: pc.Repo, Project: pc.Name, Token: pc.Token.Value(),
			Email: pc.Jira.Email, Deployment: pc.Jira.Deployment, Logger: log.Named("jira"), Writer: instance,
			Locker: redislock.Locker{RDB: rdb}})
		if err != nil {
			return nil, nil, "", err
		}
		return tr, jira.Webhooks{}, tr.Locator(), nil
	}
	return nil, nil, "", fmt.Errorf("platform %q is not supported", pc.Platform)
}

func (d *Daemon) labels() lifecycle.Labels { return lifecycle.Labels{Prefix: d.cfg.LabelPrefix} }

// Claims exposes the claim service (the demo and tests drive it directly).
func (d *Daemon) Claims() *lifecycle.ClaimService { return d.claims }

// Addr is the receiver's bound address, once listening.
func (d *Daemon) Addr() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.addr
}

// Listening is closed once the HTTP listener is bound.
func (d *Daemon) Listening() <-chan struct{} { return d.listened }

// Run runs every configured role until ctx is done, then shuts down
// gracefully: receivers stop, consumers hand back what they could not
// finish, leases are released so another replica takes over at once.
func (d *Daemon) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg := d.cfg
	d.log.Info("starting", zap.Strings("roles", cfg.Roles), zap.Int("projects", len(d.projects)))
	var wg sync.WaitGroup
	errc := make(chan error, 4)

	presCtx, stopPresence := context.WithCancel(context.WithoutCancel(ctx))
	defer stopPresence()
	presDone := make(chan struct{})
	go func() { defer close(presDone); _ = d.presence.Run(presCtx) }()

	if cfg.HasRole(config.RoleReceiver) {
		ln, err := net.Listen("tcp", cfg.Listen)
		if err != nil {
			return fmt.Errorf("listen %s: %w", cfg.Listen, err)
		}
		d.mu.Lock()
		d.addr = ln.Addr().String()
		d.mu.Unlock()
		close(d.listened)
		rc := receiver.New(d.rdb, d.claims, d.routes, receiver.Config{MaxBody: cfg.Webhook.MaxBodyBytes,
			DeliveryTTL: cfg.Webhook.DeliveryTTL, Logger: d.log})
		srv := &http.Server{Handler: rc.Handler(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 64 << 10}
		d.log.Info("receiver listening", zap.String("addr", d.addr))
		wg.Go(func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("receiver: %w", err)
			}
		})
		context.AfterFunc(ctx, func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
			rc.Close()
		})
	}
	if cfg.HasRole(config.RoleConsumer) {
		exec := lifecycle.NewExecutor(d.rdb, d.queue, d.projects, lifecycle.ExecutorConfig{
			Instance: cfg.InstanceID, Concurrency: cfg.Consumer.Concurrency,
			HeartbeatTTL: cfg.Consumer.HeartbeatTTL, HeartbeatRenew: cfg.Consumer.HeartbeatRenew,
			ShutdownGrace: cfg.Consumer.ShutdownGrace, KillGrace: cfg.Consumer.KillGrace,
			WorkDir: cfg.Consumer.WorkDir, TailBytes: cfg.Consumer.TailBytes, CancelCheck: cfg.Consumer.CancelCheck, Labels: d.labels(),
			Liveness: d.presence, Logger: d.log.Named("executor"), Observer: d.observer,
		})
		wg.Go(func() { _ = exec.Run(ctx) })
	}
	if cfg.HasRole(config.RolePoller) {
		intervals := map[string]time.Duration{}
		for _, p := range cfg.Projects {
			if p.Polling.Enabled {
				intervals[p.Name] = p.Polling.Interval
			}
		}
		if len(intervals) > 0 {
			poller := lifecycle.NewPoller(d.claims, intervals, d.log)
			l := lease.New(d.rdb, lease.Config{Key: keys.Leader("poller"), Instance: cfg.InstanceID,
				TTL: cfg.Poller.LeaseTTL, Logger: d.log.Named("lease.poller")})
			wg.Go(func() { _ = l.Run(ctx, func(lctx context.Context) { _ = poller.Run(lctx) }) })
		}
	}
	if cfg.HasRole(config.RoleHousekeeping) {
		hk := cfg.Housekeeping
		l := lease.New(d.rdb, lease.Config{Key: keys.Leader("housekeeping"), Instance: cfg.InstanceID,
			TTL: hk.LeaseTTL, Logger: d.log.Named("lease.housekeeping")})
		stale := housekeeping.NewStaleJobDetector(d.rdb, d.claims, housekeeping.StaleJobDetectorConfig{
			FastInterval: hk.FastInterval, SlowInterval: hk.SlowInterval, Fence: l.Fence, Logger: d.log})
		recon := housekeeping.NewEnqueuedReconciler(d.rdb, d.queue, d.claims, housekeeping.EnqueuedReconcilerConfig{
			FastInterval: hk.FastInterval, SlowInterval: hk.SlowInterval, Grace: hk.EnqueuedGrace, Fence: l.Fence, Logger: d.log})
		var sweep, blocked []string
		stuck := map[string]housekeeping.StuckThresholds{}
		for _, p := range cfg.Projects {
			if !p.Polling.Enabled {
				sweep = append(sweep, p.Name)
			}
			if p.Readiness.RequireNoOpenBlockers {
				blocked = append(blocked, p.Name)
			}
			stuck[p.Name] = housekeeping.StuckThresholds{EnqueuedAfter: p.Stuck.EnqueuedAfter,
				InProgressAfter: p.Stuck.InProgressAfter, Comment: p.Stuck.Comment}
		}
		sweeper := housekeeping.NewTriggerSweeper(d.claims, housekeeping.TriggerSweeperConfig{
			Projects: sweep, Blocked: blocked, Interval: hk.SlowInterval, Fence: l.Fence, Logger: d.log})
		cancels := housekeeping.NewCancelDetector(d.rdb, d.claims, housekeeping.CancelDetectorConfig{
			Interval: hk.SlowInterval, Fence: l.Fence, Logger: d.log})
		stuckDetector := housekeeping.NewStuckDetector(d.rdb, d.queue, d.claims, housekeeping.StuckDetectorConfig{
			Projects: stuck, Interval: hk.SlowInterval, Fence: l.Fence, Logger: d.log})
		epoch := housekeeping.NewEpochWatcher(d.rdb, housekeeping.EpochWatcherConfig{Interval: hk.FastInterval, Fence: l.Fence, Logger: d.log},
			stale.Kick, recon.Kick)
		wg.Go(func() {
			_ = l.Run(ctx, func(lctx context.Context) {
				d.log.Info("housekeeping leader")
				var hw sync.WaitGroup
				hw.Go(func() { _ = stale.Run(lctx) })
				hw.Go(func() { _ = recon.Run(lctx) })
				hw.Go(func() { _ = epoch.Run(lctx) })
				hw.Go(func() { _ = sweeper.Run(lctx) })
				hw.Go(func() { _ = cancels.Run(lctx) })
				hw.Go(func() { _ = stuckDetector.Run(lctx) })
				hw.Wait()
			})
		})
	}
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
		cancel()
	}
	wg.Wait()
	// Presence goes last: its key must outlive every run this replica owns.
	stopPresence()
	<-presDone
	d.log.Info("stopped")
	return runErr
}
