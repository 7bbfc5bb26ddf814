package projects

import (
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// The web URLs of the real platforms, from their documented API roots.
func TestWebURLShapes(t *testing.T) {
	for _, c := range []struct {
		platform, base, repo, id, want string
	}{
		{"github", "https://api.github.com/", "acme/app", "acme/app#12", "https://github.com/acme/app/issues/12"},
		{"github", "https://ghe.example.com/api/v3/", "acme/app", "acme/app#12", "https://ghe.example.com/acme/app/issues/12"},
		{"gitlab", "https://gitlab.com/api/v4/", "group/sub/app", "group/sub/app#3", "https://gitlab.com/group/sub/app/-/issues/3"},
		{"azuredevops", "https://dev.azure.com/", "acme/web", "acme/web#1234", "https://dev.azure.com/acme/web/_workitems/edit/1234"},
		{"jira", "https://acme.atlassian.net/", "PROJ", "PROJ-7", "https://acme.atlassian.net/browse/PROJ-7"},
	} {
		pc := &config.Project{Name: "p", Platform: c.platform, BaseURL: c.base, Repo: c.repo, Jira: config.Jira{Email: "a@b.c"}}
		tr, _, _, err := Tracker(pc, nil, nil, "i", "agent-smith", nil)
		if err != nil {
			t.Fatalf("%s: %v", c.platform, err)
		}
		got, err := tr.(platforms.WebLinker).WebURL(platforms.Ref{Platform: c.platform, Project: "p", ID: c.id})
		if err != nil || got != c.want {
			t.Errorf("%s WebURL(%s) = %q, %v; want %q", c.platform, c.id, got, err, c.want)
		}
	}
}

// Every per-project setting a service reads is on lifecycle.Project, built
// here from config: the services read it from there, never from config.
func TestLifecycleCarriesThePerProjectSettings(t *testing.T) {
	cfg, err := config.Parse([]byte(`
projects:
  - {name: polled, platform: github, repo: o/a, token_env: T, polling: {enabled: true, interval: 7s}, pipeline: {command: [run]},
     readiness: {require_no_open_blockers: true}, stuck: {enqueued_after: 5m, comment: true}}
  - {name: hooked, platform: github, repo: o/b, token_env: T, webhook: {secret_env: S}, polling: {interval: 9s}, pipeline: {command: [run]}}
`), func(string) (string, bool) { return "x", true })
	if err != nil {
		t.Fatal(err)
	}
	polled, hooked := Lifecycle(&cfg.Projects[0], nil), Lifecycle(&cfg.Projects[1], nil)
	if polled.PollInterval != 7*time.Second || hooked.PollInterval != 0 {
		t.Errorf("poll intervals %s, %s; want 7s and 0 (polling off: the sweeper lists it)", polled.PollInterval, hooked.PollInterval)
	}
	if !polled.RequireNoOpenBlockers || hooked.RequireNoOpenBlockers {
		t.Error("require_no_open_blockers not carried")
	}
	want := lifecycle.StuckThresholds{EnqueuedAfter: 5 * time.Minute, InProgressAfter: lifecycle.DefaultStuckInProgress, Comment: true}
	if polled.Stuck != want {
		t.Errorf("stuck %+v, want %+v", polled.Stuck, want)
	}
	if got := hooked.Stuck.Limit(lifecycle.Enqueued); got != lifecycle.DefaultStuckEnqueued {
		t.Errorf("default enqueued limit %s", got)
	}
}

// A discovered block that polls counts before it is expanded, so a replica
// contends for the poller's lease even while it matched no repository.
func TestAnyPollsSeesConfiguredBlocks(t *testing.T) {
	hooked := config.Project{Name: "hooked"}
	org := config.Project{Name: "org", Repos: []string{"acme/*"}, Polling: config.Polling{Enabled: true}}
	if AnyPolls([]config.Project{hooked}) || !AnyPolls([]config.Project{hooked, org}) {
		t.Errorf("AnyPolls: want false for a webhook project alone, true with a polling discovered block")
	}
}

// The lifecycle redacts every secret the project's config holds.
func TestLifecycleRedactsTheProjectsSecrets(t *testing.T) {
	env := map[string]string{"T": "tracker-token", "S": "webhook-secret", "W": "push-token", "P": "pipeline-secret"}
	cfg, err := config.Parse([]byte(`
projects:
  - {name: p, platform: gitlab, repo: o/a, token_env: T, webhook: {secret_env: S},
     workspace: {git: {url: "https://git.example/o/a.git", token_env: W}},
     pipeline: {command: [run], secrets: [{name: X, from: {env: P}}]}}
`), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	p := Lifecycle(&cfg.Projects[0], nil)
	for _, v := range env {
		if got := p.Redact.String("x " + v + " y"); got != "x [redacted] y" {
			t.Errorf("%s: %q", v, got)
		}
	}
}
