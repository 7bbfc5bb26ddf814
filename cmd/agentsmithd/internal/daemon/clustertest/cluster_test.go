package clustertest_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentsmithd/agentsmithd/cmd/agentsmithd/internal/daemon"
	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/internal/simcases"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/redisconn"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

func TestMain(m *testing.M) {
	// What daemon.New does for a cluster config, done before any test
	// builds a key.
	if err := keys.UseHashTag(true); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

const (
	token  = "cluster-e2e-token"
	secret = "cluster-e2e-secret"
)

var (
	gh     = simcases.GitHub
	labels = lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}
)

// pipelineScript appends "start <id> <attempt>" to the run log, waits for
// the gate file when the title says "hold" and fails (exit 7) when it says
// "fail".
const pipelineScript = `echo "start $AGENTSMITH_TICKET_ID $AGENTSMITH_ATTEMPT" >> "$RUN_LOG"
case "$AGENTSMITH_TITLE" in *hold*) while [ ! -f "$GATE" ]; do sleep 0.05; done ;; esac
case "$AGENTSMITH_TITLE" in *fail*) exit 7 ;; esac
true`

// world is a 3-master Redis Cluster and a GitHub trackersim served over
// HTTP, with a run log the pipelines append to.
type world struct {
	t       *testing.T
	cluster *redistest.Cluster
	sim     *trackersim.Sim
	simURL  string
	dir     string
	runLog  string
	gate    string
}

func newWorld(t *testing.T) *world {
	w := &world{t: t, cluster: redistest.StartCluster(t, 3), sim: trackersim.New(trackersim.Options{}), dir: t.TempDir()}
	srv := httptest.NewServer(w.sim.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(w.sim.Close)
	w.simURL = srv.URL
	w.runLog = filepath.Join(w.dir, "runs.log")
	w.gate = filepath.Join(w.dir, "gate")
	return w
}

// config is a cluster-mode config for one replica with every interval
// shortened; consumer and projectExtra are spliced into the consumer block
// and the project (lines indented by four spaces).
func (w *world) config(instance, consumer, projectExtra string) *config.Config {
	w.t.Helper()
	addrs := make([]string, 0, 3)
	for _, a := range w.cluster.Addrs() {
		addrs = append(addrs, fmt.Sprintf("%q", a))
	}
	yml := fmt.Sprintf(`
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
instance_id: %s
redis: {mode: cluster, addrs: [%s]}
consumer: {%sheartbeat_ttl: 3s, heartbeat_renew: 500ms, shutdown_grace: 2s, kill_grace: 1s, work_dir: %q}
housekeeping: {fast_interval: 200ms, slow_interval: 1s, instance_ttl: 2s, lease_ttl: 2s, delayed_interval: 50ms}
poller: {lease_ttl: 2s}
projects:
  - name: app
    %s
    webhook: {secret_env: E2E_SECRET}
%s    pipeline:
      command: ["sh", "-c", %q]
      env: {RUN_LOG: %q, GATE: %q}
      max_attempts: 2
      retry: {exit_codes: [7], backoff: {initial: 100ms, max: 200ms}}
`, instance, strings.Join(addrs, ", "), consumer, filepath.Join(w.dir, instance), gh.Project(w.simURL, "E2E_TOKEN", "    "),
		projectExtra, pipelineScript, w.runLog, w.gate)
	cfg, err := config.Parse([]byte(yml), func(k string) (string, bool) {
		return map[string]string{"E2E_TOKEN": token, "E2E_SECRET": secret}[k], k == "E2E_TOKEN" || k == "E2E_SECRET"
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return cfg
}

// startDaemon runs a replica until the test ends and hooks the sim's
// webhooks to it. A Redis error naming CROSSSLOT in its log fails the test:
// it means a multi-key command spanned hash slots.
func (w *world) startDaemon(cfg *config.Config) {
	t := w.t
	t.Helper()
	obs, logs := observer.New(zap.DebugLevel)
	log := zap.New(zapcore.NewTee(zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)).Core(), obs))
	t.Cleanup(func() {
		for _, e := range logs.All() {
			if line := e.Message + " " + fmt.Sprint(e.ContextMap()); strings.Contains(line, "CROSSSLOT") {
				t.Errorf("%s logged a cross-slot command: %s", cfg.InstanceID, line)
				return
			}
		}
	})
	d, err := daemon.New(cfg, daemon.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("daemon did not stop within 20s")
		}
	})
	select {
	case <-d.Listening():
	case err := <-done:
		t.Fatalf("daemon exited: %v", err)
	}
	w.sim.AddHook(gh.Hook("http://"+d.Addr(), secret))
}

func (w *world) state(n int) lifecycle.State {
	is, _ := w.sim.Issue(gh.Repo, n)
	return labels.StateOf(is.Labels)
}

func (w *world) waitState(n int, timeout time.Duration, want lifecycle.State) {
	w.t.Helper()
	eventually.Wait(w.t, timeout, fmt.Sprintf("ticket %d %s", n, want), func() bool { return w.state(n) == want })
}

// openGate lets every held pipeline finish.
func (w *world) openGate() {
	if err := os.WriteFile(w.gate, nil, 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// starts lists the run log's "start" lines as "<id> <attempt>", in order.
func (w *world) starts() []string {
	b, _ := os.ReadFile(w.runLog)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "start "); ok {
			out = append(out, rest)
		}
	}
	return out
}

// lifecyclePath is issue n's label transitions as the tracker saw them. A
// write that keeps the state is the second half of a GitHub transition
// (add the new label, then remove the old one) and is not listed.
func (w *world) lifecyclePath(n int) []string {
	var path []string
	for _, wr := range w.sim.Writes() {
		if from, to := labels.StateOf(wr.Before), labels.StateOf(wr.After); wr.Number == n && wr.Writer != "human" && from != to {
			path = append(path, from.String()+"→"+to.String())
		}
	}
	return path
}

// checkKeysTagged fails unless every key on every master is in the
// {agentsmith} slot.
func (w *world) checkKeysTagged() {
	w.t.Helper()
	all, err := redisconn.ScanKeys(context.Background(), w.cluster.Client(w.t), "*")
	if err != nil {
		w.t.Fatal(err)
	}
	if !slices.Contains(all, "{agentsmith}:epoch") {
		w.t.Errorf("no {agentsmith}:epoch among %q", all)
	}
	for _, k := range all {
		if !strings.HasPrefix(k, "{agentsmith}:") {
			w.t.Errorf("key %q lacks the hash tag", k)
		}
	}
}

// TestClusterWebhookToDone runs two replicas against a 3-master cluster:
// a webhook claims the ticket, a consumer runs it, it ends Done with one
// pipeline start, and every key the daemon wrote carries the hash tag.
func TestClusterWebhookToDone(t *testing.T) {
	w := newWorld(t)
	for _, instance := range []string{"replica-a", "replica-b"} {
		w.startDaemon(w.config(instance, "concurrency: 2, ", ""))
	}
	n := w.sim.CreateIssue(gh.Repo, "Cluster ticket", "body", "agent-smith")
	w.waitState(n, 20*time.Second, lifecycle.Done)
	if got := w.starts(); !slices.Equal(got, []string{gh.ID(n) + " 1"}) {
		t.Errorf("pipeline starts %q, want one of %s", got, gh.ID(n))
	}
	if path, want := w.lifecyclePath(n), []string{"pending→enqueued", "enqueued→in-progress", "in-progress→done"}; !slices.Equal(path, want) {
		t.Errorf("transitions = %q, want %q", path, want)
	}
	w.checkKeysTagged()
}
