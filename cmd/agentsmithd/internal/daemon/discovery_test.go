package daemon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/cmd/agentsmithd/internal/daemon"
	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/discovery"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/simcases"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// One project block with repos patterns serves an organisation through one
// organisation-wide webhook: tickets in two discovered repositories run
// (one under its override's trigger label), a ticket in an excluded
// repository and one in an archived repository are never claimed.
func TestDiscoveredRepositoriesRunFromOneOrganisationWebhook(t *testing.T) {
	e := newEnv(t)
	for _, r := range []string{"acme/api", "acme/web-a", "acme/legacy-x", "acme/old"} {
		e.sim.CreateRepo(r)
	}
	e.sim.ArchiveRepo("acme/old")
	yml := strings.Replace(e.configYAML("r1", ""), "repo: acme/app",
		`repos: ["acme/*", "!acme/legacy-*"]
    overrides: [{repos: ["acme/web-*"], trigger_label: ship-it}]`, 1)
	cfg, err := config.Parse([]byte(yml), lookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	found, err := discovery.Expand(context.Background(), cfg, discovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Projects) != 2 || found[0].Archived != 1 || found[0].Excluded != 1 { // acme/api, acme/web-a
		t.Fatalf("projects %d, found %+v", len(cfg.Projects), found)
	}
	d := e.startDaemon(cfg)
	hook := simcases.GitHub.Hook("http://"+d.Addr(), testSecret)
	hook.Repo = "" // every repository, as an organisation webhook
	e.sim.AddHook(hook)

	legacy := e.sim.CreateIssue("acme/legacy-x", "excluded", "", "agent-smith")
	web := e.sim.CreateIssue("acme/web-a", "override", "", "ship-it")
	webDefault := e.sim.CreateIssue("acme/web-a", "default label is not web's trigger", "", "agent-smith")
	api := e.sim.CreateIssue("acme/api", "plain", "", "agent-smith")
	for repo, n := range map[string]int{"acme/web-a": web, "acme/api": api} {
		e.repo = repo
		if got := e.waitState(n, 30*time.Second, lifecycle.Done, lifecycle.Failed); got != lifecycle.Done {
			t.Fatalf("%s#%d: %v", repo, n, got)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.sim.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	for repo, n := range map[string]int{"acme/legacy-x": legacy, "acme/web-a": webDefault} {
		e.repo = repo
		if got := e.state(n); got != lifecycle.Pending {
			t.Errorf("%s#%d was claimed: %v", repo, n, got)
		}
	}
}

// A running daemon follows the organisation: a repository created after it
// started is served once GitHub's repository webhook reaches one replica
// (the full listing is an hour away, so only the webhook's signal can add
// it); an archived repository stops being watched, and its ticket that was
// running when it left finishes once it is unarchived and watched again.
func TestDiscoveryFollowsRepositoriesWhileRunning(t *testing.T) {
	e := newEnv(t)
	e.sim.CreateRepo("acme/api")
	yml := strings.Replace(e.configYAML("r1", "discovery: {interval: 1h, signal_check: 100ms}\n"), "repo: acme/app", `repos: ["acme/*"]`, 1)
	d, watched := e.startFollowing(yml)
	if !watched("app.api") || watched("app.new") {
		t.Fatalf("watched at start: %v", d.Claims().Projects().Names())
	}

	// One listing at start (Expand), one the refresher begins with: only
	// the webhook's signal can list again after that.
	eventually.Wait(t, 10*time.Second, "the refresher's first listing", func() bool {
		return e.sim.Stats().Calls["GET /orgs/{org}/repos"] >= 2
	})
	e.sim.CreateRepo("acme/new")
	eventually.Wait(t, 10*time.Second, "the new repository to be watched", func() bool { return watched("app.new") })
	e.repo = "acme/new"
	n := e.sim.CreateIssue("acme/new", "plain", "", "agent-smith")
	if got := e.waitState(n, 30*time.Second, lifecycle.Done, lifecycle.Failed); got != lifecycle.Done {
		t.Fatalf("acme/new#%d: %v", n, got)
	}

	e.repo = "acme/api"
	held := e.sim.CreateIssue("acme/api", "hold", "", "agent-smith")
	e.waitState(held, 30*time.Second, lifecycle.InProgress)
	e.sim.ArchiveRepo("acme/api")
	eventually.Wait(t, 10*time.Second, "the archived repository to be retired", func() bool { return !watched("app.api") })
	e.sim.UnarchiveRepo("acme/api")
	eventually.Wait(t, 10*time.Second, "the unarchived repository to be watched again", func() bool { return watched("app.api") })
	e.openGate()
	if got := e.waitState(held, 30*time.Second, lifecycle.Done, lifecycle.Failed); got != lifecycle.Done {
		t.Fatalf("acme/api#%d: %v", held, got)
	}
	if log, _ := e.readRunLog(); strings.Count(log, "start acme/api#") != 1 {
		t.Errorf("acme/api#%d ran %d times, want 1", held, strings.Count(log, "start acme/api#"))
	}
}

// startFollowing starts a replica on yml whose projects discovery expands,
// keeping them as configured so the replica follows changes, with one hook
// of the env's platform for every repository (a GitHub organisation's or
// App's, a Jira admin webhook); watched reports whether a project is served
// now.
func (e *env) startFollowing(yml string) (d *daemon.Daemon, watched func(name string) bool) {
	e.t.Helper()
	cfg, err := config.Parse([]byte(yml), lookupEnv)
	if err != nil {
		e.t.Fatal(err)
	}
	e.configured = cfg.Projects
	if _, err := discovery.Expand(context.Background(), cfg, discovery.Options{}); err != nil {
		e.t.Fatal(err)
	}
	d = e.startDaemon(cfg)
	hook := e.pc.Hook("http://"+d.Addr(), testSecret)
	hook.Repo = "" // every repository
	e.sim.AddHook(hook)
	return d, func(name string) bool { _, ok := d.Claims().Projects()[name]; return ok }
}

// A Jira site's projects are followed the same way through Jira's project
// events: a project created after the start is served once its
// project_created delivery reaches the daemon (the full listing is an hour
// away), its ticket runs to Done, and an archived project is retired.
func TestDiscoveryFollowsJiraProjects(t *testing.T) {
	e := newEnvFor(t, simcases.Jira)
	e.sim.CreateRepo("APP")
	yml := strings.Replace(e.configYAML("r1", "discovery: {interval: 1h, signal_check: 100ms}\n"), "repo: APP", `repos: ["*"]`, 1)
	d, watched := e.startFollowing(yml)
	if !watched("app.app") || watched("app.ops") {
		t.Fatalf("watched at start: %v", d.Claims().Projects().Names())
	}
	// One listing at start (Expand), one the refresher begins with.
	const listing = "GET /jira/rest/api/{v}/project/search"
	eventually.Wait(t, 10*time.Second, "the refresher's first listing", func() bool { return e.sim.Stats().Calls[listing] >= 2 })
	e.sim.CreateRepo("OPS")
	eventually.Wait(t, 10*time.Second, "the new project to be watched", func() bool { return watched("app.ops") })
	e.repo = "OPS"
	e.pc = e.pc.WithRepo("OPS")
	n := e.sim.CreateIssue("OPS", "plain", "", "agent-smith")
	if got := e.waitState(n, 30*time.Second, lifecycle.Done, lifecycle.Failed); got != lifecycle.Done {
		t.Fatalf("OPS-%d: %v", n, got)
	}
	e.sim.ArchiveRepo("OPS")
	eventually.Wait(t, 10*time.Second, "the archived project to be retired", func() bool { return !watched("app.ops") })
}

// A GitLab group on a self-managed instance is followed through its system
// hook: with the full listing an hour away, a project created in the group
// after the start is served once its project_create delivery arrives, its
// ticket runs to Done, and an archived project (project_update) is retired.
// Group webhooks send no project events; GitLab.com has no system hooks, so
// there the interval alone follows the group.
func TestDiscoveryFollowsGitLabSystemHooks(t *testing.T) {
	e := newEnvFor(t, simcases.GitLab)
	e.sim.CreateRepo("acme/sub/app")
	yml := strings.Replace(e.configYAML("r1", "discovery: {interval: 1h, signal_check: 100ms}\n"), "repo: acme/sub/app", "group: acme/sub", 1)
	d, watched := e.startFollowing(yml)
	if !watched("app.app") || watched("app.new") {
		t.Fatalf("watched at start: %v", d.Claims().Projects().Names())
	}
	e.sim.AddHook(trackersim.Hook{URL: "http://" + d.Addr() + "/webhooks/gitlab", Secret: testSecret, Dialect: "gitlab", System: true})
	const listing = "GET /gitlab/api/v4/groups/{id}/projects"
	eventually.Wait(t, 10*time.Second, "the refresher's first listing", func() bool { return e.sim.Stats().Calls[listing] >= 2 })
	e.sim.CreateRepo("acme/sub/new")
	eventually.Wait(t, 10*time.Second, "the new project to be watched", func() bool { return watched("app.new") })
	e.repo, e.pc = "acme/sub/new", e.pc.WithRepo("acme/sub/new")
	n := e.sim.CreateIssue("acme/sub/new", "plain", "", "agent-smith")
	if got := e.waitState(n, 30*time.Second, lifecycle.Done, lifecycle.Failed); got != lifecycle.Done {
		t.Fatalf("acme/sub/new#%d: %v", n, got)
	}
	e.sim.ArchiveRepo("acme/sub/new")
	eventually.Wait(t, 10*time.Second, "the archived project to be retired", func() bool { return !watched("app.new") })
}
