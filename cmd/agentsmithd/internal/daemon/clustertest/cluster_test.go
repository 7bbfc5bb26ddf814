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

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/cmd/agentsmithd/internal/daemon"
	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/simcases"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/eventually"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/redisconn"
	"github.com/agentsmithd/agentsmithd/pkg/redistest"
	"github.com/agentsmithd/agentsmithd/platforms/sim"
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

// TestClusterWebhookToDone runs two replicas against a 3-master cluster:
// a webhook claims the ticket, a consumer runs it, it ends Done with one
// pipeline start, and every key the daemon wrote carries the hash tag.
func TestClusterWebhookToDone(t *testing.T) {
	cluster := redistest.StartCluster(t, 3)
	s := sim.New(sim.Options{})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(s.Close)
	dir := t.TempDir()
	runLog := filepath.Join(dir, "runs.log")
	gh := simcases.GitHub

	addrs := make([]string, 0, 3)
	for _, a := range cluster.Addrs() {
		addrs = append(addrs, fmt.Sprintf("%q", a))
	}
	for _, instance := range []string{"replica-a", "replica-b"} {
		yml := fmt.Sprintf(`
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
instance_id: %s
redis: {mode: cluster, addrs: [%s]}
consumer: {concurrency: 2, heartbeat_ttl: 3s, heartbeat_renew: 500ms, shutdown_grace: 2s, kill_grace: 1s, work_dir: %q}
housekeeping: {fast_interval: 200ms, slow_interval: 1s, instance_ttl: 2s, lease_ttl: 2s}
poller: {lease_ttl: 2s}
projects:
  - name: app
    %s
    webhook: {secret_env: E2E_SECRET}
    pipeline:
      command: ["sh", "-c", "echo \"start $AGENTSMITH_TICKET_ID\" >> \"$RUN_LOG\""]
      env: {RUN_LOG: %q}
`, instance, strings.Join(addrs, ", "), filepath.Join(dir, instance), gh.Project(srv.URL, "E2E_TOKEN", "    "), runLog)
		cfg, err := config.Parse([]byte(yml), func(k string) (string, bool) {
			return map[string]string{"E2E_TOKEN": token, "E2E_SECRET": secret}[k], k == "E2E_TOKEN" || k == "E2E_SECRET"
		})
		if err != nil {
			t.Fatal(err)
		}
		startDaemon(t, cfg, s, gh)
	}

	n := s.CreateIssue(gh.Repo, "Cluster ticket", "body", "agent-smith")
	labels := lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}
	eventually.Wait(t, 20*time.Second, "ticket Done", func() bool {
		is, _ := s.Issue(gh.Repo, n)
		return labels.StateOf(is.Labels) == lifecycle.Done
	})
	b, _ := os.ReadFile(runLog)
	if got := strings.Count(string(b), "start "+gh.ID(n)+"\n"); got != 1 {
		t.Errorf("pipeline started %d times, want 1:\n%s", got, b)
	}
	var path []string
	for _, w := range s.Writes() {
		// A write that keeps the state is the second half of a GitHub
		// transition (add the new label, then remove the old one).
		if from, to := labels.StateOf(w.Before), labels.StateOf(w.After); w.Number == n && w.Writer != "human" && from != to {
			path = append(path, from.String()+"→"+to.String())
		}
	}
	if want := []string{"pending→enqueued", "enqueued→in-progress", "in-progress→done"}; !slices.Equal(path, want) {
		t.Errorf("transitions = %q, want %q", path, want)
	}

	// Every key, on every master, is in the {agentsmith} slot.
	rdb := cluster.Client(t)
	all, err := redisconn.ScanKeys(context.Background(), rdb, "*")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(all, "{agentsmith}:epoch") {
		t.Errorf("no {agentsmith}:epoch among %q", all)
	}
	for _, k := range all {
		if !strings.HasPrefix(k, "{agentsmith}:") {
			t.Errorf("key %q lacks the hash tag", k)
		}
	}
}

func startDaemon(t *testing.T, cfg *config.Config, s *sim.Sim, gh simcases.Case) {
	t.Helper()
	d, err := daemon.New(cfg, daemon.Options{Logger: zaptest.NewLogger(t)})
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
	s.AddHook(gh.Hook("http://"+d.Addr(), secret))
}
