package daemon_test

import (
	"context"
	"fmt"
	"github.com/agentsmithd/agentsmithd/pkg/eventually"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentsmithd/agentsmithd/cmd/agentsmithd/internal/daemon"
	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/redistest"
	"github.com/agentsmithd/agentsmithd/platforms/sim"
)

const (
	testToken  = "e2e-token-do-not-log"
	testSecret = "e2e-webhook-secret-do-not-log"
	repo       = "acme/app"
)

var labels = lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}

// platformCase binds the end-to-end tests to one tracker dialect of the sim.
type platformCase struct {
	name string
	// repo is the project's locator, also the sim's store key.
	repo string
	// project returns the platform-specific lines of the project's config.
	project func(simURL, repo string) string
	// id formats issue n's Ref.ID.
	id func(repo string, n int) string
	// foldsCase: labels are case-insensitive (Azure DevOps tags).
	foldsCase bool
	// hook subscribes the receiver to the sim's deliveries.
	hook func(url string) sim.Hook
}

var githubCase = platformCase{
	name: "github",
	repo: repo,
	project: func(simURL, repo string) string {
		return fmt.Sprintf("platform: github\n    base_url: %s/github/\n    repo: %s\n    token: {env: E2E_TOKEN}", simURL, repo)
	},
	id: func(repo string, n int) string { return fmt.Sprintf("%s#%d", repo, n) },
	hook: func(url string) sim.Hook {
		return sim.Hook{Repo: repo, URL: url + "/webhooks/github", Secret: testSecret}
	},
}

var gitlabCase = platformCase{
	name: "gitlab",
	repo: "acme/sub/app",
	project: func(simURL, repo string) string {
		return fmt.Sprintf("platform: gitlab\n    base_url: %s/gitlab/api/v4/\n    repo: %s\n    token: {env: E2E_TOKEN}", simURL, repo)
	},
	id: func(repo string, n int) string { return fmt.Sprintf("%s#%d", repo, n) },
	hook: func(url string) sim.Hook {
		return sim.Hook{Repo: "acme/sub/app", URL: url + "/webhooks/gitlab", Secret: testSecret, Dialect: "gitlab"}
	},
}

var adoCase = platformCase{
	name:      "azuredevops",
	repo:      "acmeorg/webapp",
	foldsCase: true,
	project: func(simURL, repo string) string {
		return fmt.Sprintf("platform: azuredevops\n    base_url: %s/ado/\n    repo: %s\n    token: {env: E2E_TOKEN}", simURL, repo)
	},
	id: func(repo string, n int) string { return fmt.Sprintf("%s#%d", repo, n) },
	hook: func(url string) sim.Hook {
		return sim.Hook{Repo: "acmeorg/webapp", URL: url + "/webhooks/azuredevops", Secret: testSecret, Dialect: "ado"}
	},
}

var jiraCase = platformCase{
	name: "jira",
	repo: "APP",
	project: func(simURL, repo string) string {
		return fmt.Sprintf("platform: jira\n    base_url: %s/jira/\n    repo: %s\n    token: {env: E2E_TOKEN}\n    jira: {email: bot@acme.example}", simURL, repo)
	},
	id: func(repo string, n int) string { return fmt.Sprintf("%s-%d", repo, n) },
	hook: func(url string) sim.Hook {
		return sim.Hook{Repo: "APP", URL: url + "/webhooks/jira", Secret: testSecret, Dialect: "jira"}
	},
}

// platformCases lists every platform the end-to-end tests run on.
var platformCases = []platformCase{githubCase, gitlabCase, adoCase, jiraCase}

// forEachPlatform runs f as a subtest per platform, each in its own world.
func forEachPlatform(t *testing.T, f func(t *testing.T, e *env)) {
	for _, pc := range platformCases {
		t.Run(pc.name, func(t *testing.T) { f(t, newEnvFor(t, pc)) })
	}
}

// env is one end-to-end world: a real redis-server, a trackersim served over
// HTTP, and a run log the pipelines append to outside the daemon.
type env struct {
	t      *testing.T
	pc     platformCase
	repo   string
	redis  *redistest.Server
	sim    *sim.Sim
	simURL string
	dir    string
	runLog string
	gate   string
}

// newEnv is a GitHub world.
func newEnv(t *testing.T) *env { return newEnvFor(t, githubCase) }

func newEnvFor(t *testing.T, pc platformCase) *env {
	t.Helper()
	e := &env{t: t, pc: pc, repo: pc.repo, redis: redistest.Start(t), sim: sim.New(sim.Options{}), dir: t.TempDir()}
	srv := httptest.NewServer(e.sim.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(e.sim.Close)
	e.simURL = srv.URL
	e.runLog = filepath.Join(e.dir, "runs.log")
	e.gate = filepath.Join(e.dir, "gate")
	return e
}

// pipeline appends "start <id> <attempt>" to the run log, waits for the gate
// file when asked to (the pipeline's own behaviour, so a test can catch a
// ticket in progress), and fails when the title says so.
const pipelineScript = `echo "start $AGENTSMITH_TICKET_ID $AGENTSMITH_ATTEMPT" >> "$RUN_LOG"
case "$AGENTSMITH_TITLE" in *hold*) while [ ! -f "$GATE" ]; do sleep 0.05; done ;; esac
case "$AGENTSMITH_TITLE" in *fail*) echo "boom: the widget exploded"; exit 7 ;; esac
echo "end $AGENTSMITH_TICKET_ID $AGENTSMITH_ATTEMPT" >> "$RUN_LOG"`

// configYAML is a config with every interval shortened so recovery paths run
// in seconds.
func (e *env) configYAML(instance string, extra string) string {
	return fmt.Sprintf(`
listen: 127.0.0.1:0
instance_id: %s
redis: {addr: %q}
consumer: {concurrency: 2, heartbeat_ttl: 3s, heartbeat_renew: 500ms, shutdown_grace: 2s, kill_grace: 1s, work_dir: %q}
housekeeping: {fast_interval: 200ms, slow_interval: 1s, instance_ttl: 2s, lease_ttl: 2s}
poller: {lease_ttl: 2s}
projects:
  - name: app
    %s
    webhook: {secrets: [{env: E2E_OLD_SECRET}, {env: E2E_SECRET}]}
    pipeline:
      command: ["sh", "-c", %q]
      env: {RUN_LOG: %q, GATE: %q}
      timeout: 30s
      max_attempts: 3
%s`, instance, e.redis.Addr(), filepath.Join(e.dir, "work"), e.pc.project(e.simURL, e.repo), pipelineScript, e.runLog, e.gate, extra)
}

func lookupEnv(k string) (string, bool) {
	switch k {
	case "E2E_TOKEN":
		return testToken, true
	case "E2E_SECRET":
		return testSecret, true
	case "E2E_OLD_SECRET":
		return "rotated-out-secret", true
	}
	return "", false
}

func (e *env) config(instance, extra string) *config.Config {
	e.t.Helper()
	cfg, err := config.Parse([]byte(e.configYAML(instance, extra)), lookupEnv)
	if err != nil {
		e.t.Fatalf("config: %v", err)
	}
	return cfg
}

// startDaemon runs a replica in-process until the test ends and hooks the
// sim's webhooks to it.
func (e *env) startDaemon(cfg *config.Config) *daemon.Daemon {
	e.t.Helper()
	// Everything the daemon logs is also kept and scanned for the
	// configured secrets when the test ends.
	obs, logs := observer.New(zap.DebugLevel)
	log := zap.New(zapcore.NewTee(zaptest.NewLogger(e.t, zaptest.Level(zap.InfoLevel)).Core(), obs))
	e.t.Cleanup(func() {
		for _, entry := range logs.All() {
			line := entry.Message + " " + fmt.Sprint(entry.ContextMap())
			for _, secret := range []string{testToken, testSecret} {
				if strings.Contains(line, secret) {
					e.t.Errorf("a secret reached the log: %q", line)
				}
			}
		}
	})
	d, err := daemon.New(cfg, daemon.Options{Logger: log})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	e.t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			e.t.Error("daemon did not stop within 20s")
		}
	})
	if cfg.HasRole(config.RoleReceiver) {
		select {
		case <-d.Listening():
		case err := <-done:
			e.t.Fatalf("daemon exited: %v", err)
		}
		e.sim.AddHook(e.pc.hook("http://" + d.Addr()))
	}
	return d
}

func (e *env) state(n int) lifecycle.State {
	is, ok := e.sim.Issue(e.repo, n)
	if !ok {
		e.t.Fatalf("issue %d missing", n)
	}
	return labels.StateOf(is.Labels)
}

func (e *env) waitState(n int, timeout time.Duration, states ...lifecycle.State) lifecycle.State {
	e.t.Helper()
	var got lifecycle.State
	eventually.Wait(e.t, timeout, fmt.Sprintf("issue %d to reach %v", n, states), func() bool {
		got = e.state(n)
		for _, s := range states {
			if got == s {
				return true
			}
		}
		return false
	})
	return got
}

// starts counts "start <id> <attempt>" lines for ticket number n.
func (e *env) starts(n int) []string {
	b, _ := os.ReadFile(e.runLog)
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "start "+e.pc.id(e.repo, n)+" ") {
			out = append(out, line)
		}
	}
	return out
}

func (e *env) openGate() {
	if err := os.WriteFile(e.gate, nil, 0o644); err != nil {
		e.t.Fatal(err)
	}
}
