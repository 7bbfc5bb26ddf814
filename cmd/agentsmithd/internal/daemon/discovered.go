package daemon

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/projects"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/receiver"
	"github.com/agentsmithd/agentsmithd/pkg/budget"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// servedProject is one project built from its config: what the lifecycle
// runs and how its webhooks reach it.
type servedProject struct {
	project *lifecycle.Project
	route   receiver.ProjectRoute
}

// buildProject builds one project's tracker, on its own HTTP client whose
// rate-limit budget is shared with every replica through Redis, and
// remembers its platform's webhook decoder.
func (d *Daemon) buildProject(pc *config.Project) (servedProject, error) {
	cfg := d.cfg
	hc := trackerhttp.NewClientWith(trackerOptions(cfg, pc, d.rdb, d.log,
		callObservers{d.metrics.TrackerCalls(pc.Platform, pc.Name), d.trackerOutages.Observer(projects.OutageProject(pc))}))
	tr, dec, locator, err := projects.Tracker(pc, d.rdb, hc, cfg.TrackerWriter(cfg.InstanceID), cfg.LabelPrefix, d.log)
	if err != nil {
		return servedProject{}, err
	}
	if _, ok := d.decoders[pc.Platform]; !ok {
		d.decoders[pc.Platform] = dec
	}
	sp := servedProject{project: projects.Lifecycle(pc, tr), route: receiver.ProjectRoute{Name: pc.Name, Locator: locator}}
	for _, s := range pc.Webhook.Secrets {
		sp.route.Secrets = append(sp.route.Secrets, []byte(s.Value()))
		sp.route.Sources = append(sp.route.Sources, s.String())
	}
	return sp, nil
}

// trackerOptions are the transport options of pc's client: its
// platform's rate-limit policy, a quota shared with every replica using
// the token through Redis, and for GitHub (github.pace_secondary) writes
// paced before the secondary limits through the same Redis, label writes
// counted as content creation only under github.pace_labels_as_content.
func trackerOptions(cfg *config.Config, pc *config.Project, rdb redis.UniversalClient, log *zap.Logger, obs trackerhttp.CallObserver) trackerhttp.Options {
	return trackerhttp.Options{Logger: log.Named(pc.Platform).Named("http"),
		Writer: cfg.TrackerWriter(cfg.InstanceID), Observer: obs, RateLimits: projects.ProjectRateLimits(pc),
		Budget: budget.New(rdb, nil), PaceSecondary: pc.GitHub.Paced()}
}

// buildRoutes is one webhook route per platform over the watched projects,
// in name order.
func (d *Daemon) buildRoutes() []receiver.Route {
	watched := d.projects.Watched()
	byPlatform := map[string]*receiver.Route{}
	for _, name := range watched.Names() {
		platform := watched[name].Platform
		r := byPlatform[platform]
		if r == nil {
			desc, _ := platforms.Lookup(platform)
			r = &receiver.Route{Platform: platform, Decoder: d.decoders[platform], FoldLocator: desc.FoldLocator}
			byPlatform[platform] = r
		}
		r.Projects = append(r.Projects, d.served[name].route)
	}
	out := make([]receiver.Route, 0, len(byPlatform))
	for _, platform := range slices.Sorted(maps.Keys(byPlatform)) {
		out = append(out, *byPlatform[platform])
	}
	return out
}

// applyDiscovered makes next, a fresh expansion of the configured
// projects, what the replica serves: a repository found for the first time
// gets its tracker built; one that left (archived, removed, no longer
// matching) is retired, so nothing new starts for it while what is queued
// or running finishes (lifecycle.ProjectSet); one that comes back is
// revived with the tracker it had. The webhook routes follow. A project
// whose tracker cannot be built is left out and logged, and the others
// still change.
func (d *Daemon) applyDiscovered(_ context.Context, next []config.Project) error {
	watched := lifecycle.Projects{}
	var failed []string
	for i := range next {
		pc := &next[i]
		if sp, ok := d.served[pc.Name]; ok {
			watched[pc.Name] = sp.project
			continue
		}
		sp, err := d.buildProject(pc)
		if err != nil {
			d.log.Warn("discovered repository not served: its tracker could not be built", zap.String("project", pc.Name), zap.Error(err))
			failed = append(failed, pc.Name)
			continue
		}
		d.served[pc.Name] = sp
		watched[pc.Name] = sp.project
	}
	// The set changes before the routes: a delivery routed in between to a
	// project just retired is answered "no longer watched" by the receiver.
	added, retired := d.projects.Replace(watched)
	if d.receiver != nil {
		d.receiver.SetRoutes(d.buildRoutes())
	}
	if len(added) > 0 || len(retired) > 0 {
		d.log.Info("discovered repositories changed", zap.Strings("added", added), zap.Strings("retired", retired),
			zap.Int("watched", len(watched)))
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d discovered repositories not served: %s", len(failed), strings.Join(failed, ", "))
	}
	return nil
}

// callObservers hands each tracker call to every observer: the metrics and
// the project's outage lines.
type callObservers []trackerhttp.CallObserver

func (os callObservers) ObserveCall(c trackerhttp.Call) {
	for _, o := range os {
		o.ObserveCall(c)
	}
}
