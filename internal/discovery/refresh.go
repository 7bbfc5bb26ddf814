package discovery

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/projects"
	"github.com/agentsmithd/agentsmithd/pkg/budget"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/github"
)

// RefresherConfig configures a Refresher.
type RefresherConfig struct {
	RDB redis.UniversalClient
	// Projects are the projects as configured, before expansion.
	Projects []config.Project
	// Interval is the full listing's period (discovery.interval).
	Interval time.Duration
	// SignalCheck is how often keys.Discovery is read (discovery.signal_check).
	SignalCheck time.Duration
	// Apply receives every successful expansion; it decides what changed.
	Apply func(ctx context.Context, projects []config.Project) error
	// List lists the platforms; default the real APIs, through Client.
	List Lister
	// Client builds the HTTP client one configured project's listings go
	// through, built once per project and kept, so every relisting
	// revalidates with its ETags (Options.Client). Default: the platform's
	// rate limits with the token's budget shared through RDB (pkg/budget).
	Client func(pc *config.Project) *http.Client
	Logger *zap.Logger
}

// Refresher keeps a running replica's discovered repositories current. It
// expands the configured projects again every Interval, and at once when
// a repository webhook moved the Redis counter keys.Discovery (which any
// replica's receiver bumps), and hands each result to Apply. A failed
// listing keeps what the replica serves: at start a failed listing stops
// the replica (Expand), but a running one that forgot an organisation on a
// tracker's 502 would leave its tickets unserved.
type Refresher struct {
	cfg RefresherConfig
	log *zap.Logger

	mu      sync.Mutex
	clients map[string]*http.Client // by configured project name
}

// NewRefresher builds a Refresher.
func NewRefresher(cfg RefresherConfig) *Refresher {
	if cfg.Interval <= 0 {
		cfg.Interval = config.DefaultDiscoveryInterval
	}
	if cfg.SignalCheck <= 0 {
		cfg.SignalCheck = config.DefaultDiscoverySignalCheck
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Client == nil {
		log := cfg.Logger.Named("http")
		cfg.Client = func(pc *config.Project) *http.Client {
			return trackerhttp.NewClientWith(trackerhttp.Options{Logger: log, RateLimits: projects.RateLimits(pc.Platform),
				Budget: budget.New(cfg.RDB, nil)})
		}
	}
	return &Refresher{cfg: cfg, log: cfg.Logger, clients: map[string]*http.Client{}}
}

// client is pc's listing client, the same for every listing. A GitHub
// App project's carries the installation's token transport
// (github.AppHTTPClient), so every listing reuses one installation token
// until ghinstallation renews it near its expiry: ETags belong to a token
// (eclipse-csi/otterdog#201), and a token minted per listing would have
// every page of every relisting answered in full and charged.
func (r *Refresher) client(pc *config.Project) *http.Client {
	r.mu.Lock()
	defer r.mu.Unlock()
	hc, ok := r.clients[pc.Name]
	if !ok {
		hc = r.cfg.Client(pc)
		if d, _ := platforms.Lookup(pc.Platform); hc != nil && d.GitHubApp && pc.GitHubApp.IsSet() {
			// A key that does not parse leaves hc as it is; the listing
			// then fails on it with the error that names it.
			if ac, err := github.AppHTTPClient(hc, appOf(pc), pc.BaseURL); err == nil {
				hc = ac
			}
		}
		r.clients[pc.Name] = hc
	}
	return hc
}

// Run refreshes until ctx is done. It reads the counter, then lists once
// at once: a webhook that bumped the counter between the process's first
// listing and this read would otherwise wait a whole Interval. That costs
// one listing more per replica start.
func (r *Refresher) Run(ctx context.Context) error {
	seen, _ := r.signal(ctx)
	if err := r.Refresh(ctx); err != nil && ctx.Err() == nil {
		r.log.Warn("discovery refresh failed: serving the repositories already found", zap.Error(err))
	}
	full := time.NewTicker(r.cfg.Interval)
	defer full.Stop()
	check := time.NewTicker(r.cfg.SignalCheck)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-full.C:
		case <-check.C:
			gen, err := r.signal(ctx)
			if err != nil || gen == seen {
				continue
			}
			seen = gen
			r.log.Info("a repository webhook asked for a listing", zap.String("generation", gen))
		}
		// However it was asked for, a listing restarts the full period.
		full.Reset(r.cfg.Interval)
		if err := r.Refresh(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("discovery refresh failed: serving the repositories already found", zap.Error(err))
		}
	}
}

// signal reads keys.Discovery; "" when it was never bumped.
func (r *Refresher) signal(ctx context.Context) (string, error) {
	v, err := r.cfg.RDB.Get(ctx, keys.Discovery()).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, err
}

// Refresh lists once and applies the result. Listings yield the token's
// reserve to claims and run transitions, as housekeeping's do.
func (r *Refresher) Refresh(ctx context.Context) error {
	ctx = trackerhttp.WithPriority(ctx, trackerhttp.PriorityLow)
	expanded, _, err := ExpandProjects(ctx, r.cfg.Projects, Options{List: r.cfg.List, Client: r.client, Logger: r.log})
	if err != nil {
		return err
	}
	return r.cfg.Apply(ctx, expanded)
}

// appOf is pc's GitHub App installation credentials.
func appOf(pc *config.Project) github.App {
	a := pc.GitHubApp
	return github.App{AppID: a.AppID, InstallationID: a.InstallationID, PrivateKey: []byte(a.PrivateKey.Value())}
}
