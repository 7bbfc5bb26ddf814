package daemon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/discovery"
	"github.com/agentsmithd/agentsmithd/internal/simcases"
	"github.com/agentsmithd/agentsmithd/lifecycle"
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
