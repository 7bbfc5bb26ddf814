package daemon_test

import (
	"context"
	"fmt"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/simcases"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentsmithd/agentsmithd/cmd/agentsmithd/internal/daemon"
	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

const (
	testToken  = "e2e-token-do-not-log"
	testSecret = "e2e-webhook-secret-do-not-log"
	// testStatusToken guards the status page in the tests that set it.
	testStatusToken = "e2e-status-token-do-not-log"
	// Redis credentials of the Redis-mode tests.
	testRedisPassword    = "e2e-redis-password-do-not-log"
	testSentinelPassword = "e2e-sentinel-password-do-not-log"
	repo                 = "acme/app" // simcases.GitHub.Repo, for the GitHub-only tests
)

var labels = lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}

// platformCases lists every platform the end-to-end tests run on.
var platformCases = simcases.All

// forEachPlatform runs f as a subtest per platform, each in its own world.
func forEachPlatform(t *testing.T, f func(t *testing.T, e *env)) {
	for _, pc := range platformCases {
		t.Run(pc.Name, func(t *testing.T) { f(t, newEnvFor(t, pc)) })
	}
}

// forEachPlatformAndIfMatchMode is forEachPlatform plus GitHub once more in
// each of the sim's other If-Match modes (ignore, 412-apply): the daemon's
// GitHub writes must be right whatever GitHub does with If-Match, and
// forEachPlatform's GitHub runs the default, GitHub's own behaviour.
func forEachPlatformAndIfMatchMode(t *testing.T, f func(t *testing.T, e *env)) {
	forEachPlatform(t, f)
	for _, mode := range trackersim.IfMatchModes {
		if mode == trackersim.IfMatchRejectWeak {
			continue
		}
		t.Run("github/if-match="+string(mode), func(t *testing.T) {
			f(t, newEnvWithSim(t, simcases.GitHub, trackersim.Options{GitHubIfMatch: mode}))
		})
	}
}

// forEachPlatformAndGitHubREST is forEachPlatform plus GitHub once more
// with github.api: rest, the daemon's other way of writing GitHub labels
// (forEachPlatform's GitHub runs the default, GraphQL).
func forEachPlatformAndGitHubREST(t *testing.T, f func(t *testing.T, e *env)) {
	forEachPlatform(t, f)
	t.Run("github/rest", func(t *testing.T) {
		e := newEnv(t)
		e.projectExtra = "    github: {api: rest}\n"
		f(t, e)
	})
}

// env is one end-to-end world: a real redis-server, a trackersim served over
// HTTP, and a run log the pipelines append to outside the daemon.
type env struct {
	t      *testing.T
	pc     simcases.Case
	repo   string
	redis  *redistest.Server
	sim    *trackersim.Sim
	simURL string
	dir    string
	runLog string
	gate   string
	// redisYAML, when set, replaces the config's redis block (another
	// Redis mode); the default is {addr: <redis>}.
	redisYAML string
	// projectExtra is appended to every project's YAML block (lines
	// indented by four spaces).
	projectExtra string
	// configured, when set, are the projects before discovery expanded
	// them (daemon.Options.Configured): the daemon lists them again.
	configured []config.Project
	// now, when set, is the replicas' clock (daemon.Options.Now).
	now func() time.Time
	// simDown, when not 0, is the status the sim's listener answers every
	// request with instead of the sim (a tracker outage, a revoked token).
	simDown atomic.Int32
}

// newEnv is a GitHub world.
func newEnv(t *testing.T) *env { return newEnvFor(t, simcases.GitHub) }

func newEnvFor(t *testing.T, pc simcases.Case) *env {
	t.Helper()
	return newEnvWithSim(t, pc, trackersim.Options{})
}

// newEnvWithSim is newEnvFor with a sim configured by opts (tokens, apps).
func newEnvWithSim(t *testing.T, pc simcases.Case, opts trackersim.Options) *env {
	t.Helper()
	e := &env{t: t, pc: pc, repo: pc.Repo, redis: redistest.Start(t), sim: trackersim.New(opts), dir: t.TempDir()}
	sim := e.sim.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code := int(e.simDown.Load()); code != 0 {
			http.Error(w, http.StatusText(code), code)
			return
		}
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(e.sim.Close)
	e.simURL = srv.URL
	e.runLog = filepath.Join(e.dir, "runs.log")
	e.gate = filepath.Join(e.dir, "gate")
	return e
}

// pipeline appends "start <id> <attempt>" to the run log, waits for the gate
// file when asked to (the pipeline's own behaviour, so a test can catch a
// ticket in progress), and fails when the title says so ("flaky": until
// the gate is open).
const pipelineScript = `echo "start $AGENTSMITH_TICKET_ID $AGENTSMITH_ATTEMPT" >> "$RUN_LOG"
case "$AGENTSMITH_TITLE" in *hold*) while [ ! -f "$GATE" ]; do sleep 0.05; done ;; esac
case "$AGENTSMITH_TITLE" in *fail*) echo "boom: the widget exploded"; exit 7 ;; esac
case "$AGENTSMITH_TITLE" in *flaky*) [ -f "$GATE" ] || { echo "flaky: no gate yet"; exit 7; } ;; esac
echo "end $AGENTSMITH_TICKET_ID $AGENTSMITH_ATTEMPT" >> "$RUN_LOG"`

// configYAML is a config with every interval shortened so recovery paths run
// in seconds, with one project per case (the env's own case by default).
func (e *env) configYAML(instance string, extra string, cases ...simcases.Case) string {
	if len(cases) == 0 {
		cases = []simcases.Case{e.pc}
	}
	var projects strings.Builder
	for _, pc := range cases {
		name := "app"
		if len(cases) > 1 {
			name = pc.Name
		}
		fmt.Fprintf(&projects, `  - name: %s
    %s
    webhook: {secrets: [{env: E2E_OLD_SECRET}, {env: E2E_SECRET}]}
    pipeline:
      command: ["sh", "-c", %q]
      env: {RUN_LOG: %q, GATE: %q}
      timeout: 30s
      max_attempts: 3
%s`, name, pc.Project(e.simURL, "E2E_TOKEN", "    "), pipelineScript, e.runLog, e.gate, e.projectExtra)
	}
	redisYAML := e.redisYAML
	if redisYAML == "" {
		redisYAML = fmt.Sprintf("{addr: %q}", e.redis.Addr())
	}
	return fmt.Sprintf(`
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
instance_id: %s
redis: %s
consumer: {concurrency: 2, heartbeat_ttl: 3s, heartbeat_renew: 500ms, shutdown_grace: 2s, kill_grace: 1s, cancel_check: 200ms, work_dir: %q}
housekeeping: {fast_interval: 200ms, slow_interval: 1s, instance_ttl: 2s, lease_ttl: 2s}
poller: {lease_ttl: 2s}
claim_lock_ttl: 5s
projects:
%s%s`, instance, redisYAML, filepath.Join(e.dir, "work"), projects.String(), extra)
}

func lookupEnv(k string) (string, bool) {
	switch k {
	case "E2E_TOKEN":
		return testToken, true
	case "E2E_SECRET":
		return testSecret, true
	case "E2E_STATUS_TOKEN":
		return testStatusToken, true
	case "E2E_OLD_SECRET":
		return "rotated-out-secret", true
	case "E2E_REDIS_PASSWORD":
		return testRedisPassword, true
	case "E2E_SENTINEL_PASSWORD":
		return testSentinelPassword, true
	}
	return "", false
}

func (e *env) config(instance, extra string, cases ...simcases.Case) *config.Config {
	e.t.Helper()
	cfg, err := config.Parse([]byte(e.configYAML(instance, extra, cases...)), lookupEnv)
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
			for _, secret := range []string{testToken, testSecret, testStatusToken, testRedisPassword, testSentinelPassword} {
				if strings.Contains(line, secret) {
					e.t.Errorf("a secret reached the log: %q", line)
				}
			}
		}
	})
	// The harness started Redis for this test (OwnRedis): runs need not
	// wait out the restart grace; the binary's tests and the chaos run do.
	d, err := daemon.New(cfg, daemon.Options{Logger: log, Configured: e.configured, OwnRedis: true, Now: e.now})
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
		for _, p := range cfg.Projects {
			for _, pc := range simcases.All {
				if pc.Name == p.Platform && pc.Repo == p.Repo {
					e.sim.AddHook(pc.Hook("http://"+d.Addr(), testSecret))
				}
			}
		}
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

// waitState waits until issue n is in one of states with that state's label
// alone: a GitHub transition shows its new state as soon as the new label is
// added, and is complete once the old one is removed too.
func (e *env) waitState(n int, timeout time.Duration, states ...lifecycle.State) lifecycle.State {
	e.t.Helper()
	var got lifecycle.State
	eventually.Wait(e.t, timeout, fmt.Sprintf("issue %d to reach %v", n, states), func() bool {
		if is, _ := e.sim.Issue(e.repo, n); len(labels.Lifecycle(is.Labels)) > 1 {
			return false
		}
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
		if strings.HasPrefix(line, "start "+e.pc.ID(n)+" ") {
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

func (e *env) readRunLog() (string, error) {
	b, err := os.ReadFile(e.runLog)
	return string(b), err
}
