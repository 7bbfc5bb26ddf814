package daemon_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/cmd/agentsmithd/internal/daemon"
	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/simcases"
	"github.com/agentsmithd/agentsmithd/internal/statuspage"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
	"github.com/agentsmithd/agentsmithd/lifecycle/ops"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// The pool tests run two projects: github (the default pool) and gitlab
// (pool gpu), so a default-only replica has work of its own to prove it
// is taking requests while a gpu request waits.
var cpuCase, gpuCase = simcases.GitHub, simcases.GitLab

// poolConfig is replica instance's config with gitlab's project in pool
// gpu; pools, when given, are its consumer.pools, and roles, when given,
// its roles. pipeline lines are added to both projects' pipelines.
func (e *env) poolConfig(instance, pipeline string, pools []string, roles ...string) *config.Config {
	e.t.Helper()
	yml := strings.Replace(e.configYAML(instance, "", cpuCase, gpuCase), "lease_ttl: 2s}",
		"lease_ttl: 2s, delayed_interval: 50ms, enqueued_grace: 1s}", 1)
	yml = strings.ReplaceAll(yml, "      max_attempts: 3\n", "      max_attempts: 3\n"+pipeline)
	cfg, err := config.Parse([]byte(yml), lookupEnv)
	if err != nil {
		e.t.Fatalf("config: %v", err)
	}
	for i := range cfg.Projects {
		if cfg.Projects[i].Platform == gpuCase.Name {
			cfg.Projects[i].Pool = "gpu"
		}
	}
	cfg.Consumer.Pools = pools
	if len(roles) > 0 {
		cfg.Roles = roles
	}
	return cfg
}

// stateOf is the state of ticket n of case pc on the sim.
func (e *env) stateOf(pc simcases.Case, n int) lifecycle.State {
	is, _ := e.sim.Issue(pc.Repo, n)
	return labels.StateOf(is.Labels)
}

func (e *env) waitCase(pc simcases.Case, n int, s lifecycle.State) {
	e.t.Helper()
	eventually.Wait(e.t, 30*time.Second, pc.Name+" ticket to reach "+s.String(), func() bool {
		is, _ := e.sim.Issue(pc.Repo, n)
		return len(labels.Lifecycle(is.Labels)) == 1 && labels.StateOf(is.Labels) == s
	})
}

// startsOf counts the pipeline starts of ticket n of case pc.
func (e *env) startsOf(pc simcases.Case, n int) int {
	b, _ := os.ReadFile(e.runLog)
	return strings.Count(string(b), "start "+pc.ID(n)+" ")
}

// runners are the instances that moved ticket n of pc to in-progress, in
// order, from the audit stream.
func (e *env) runners(pc simcases.Case, n int) []string {
	e.t.Helper()
	ref := platforms.Ref{Platform: pc.Name, Project: pc.Name, ID: pc.ID(n)}
	hist, err := audit.NewReader(e.redis.Client(e.t)).History(context.Background(), ref, time.Time{}, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, h := range hist {
		if h.Event.Kind == lifecycle.EventTransition && h.Event.To == lifecycle.InProgress {
			out = append(out, h.Event.Instance)
		}
	}
	return out
}

// gpuQueued is the requests waiting in pool gpu's queue.
func (e *env) gpuQueued() []lifecycle.PipelineRequest {
	e.t.Helper()
	vals, err := e.redis.Client(e.t).LRange(context.Background(), keys.PoolQueue("gpu"), 0, -1).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	var out []lifecycle.PipelineRequest
	for _, v := range vals {
		req, err := lifecycle.DecodeRequest([]byte(v))
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, req)
	}
	return out
}

// A request of pool gpu waits while only default replicas live, and the
// status page and the metrics say so; a gpu replica then takes it.
func TestPoolRequestWaitsForAReplicaOfItsPool(t *testing.T) {
	e := newEnv(t)
	a := e.startDaemon(e.poolConfig("replica-a", "", nil))
	g := e.sim.CreateIssue(gpuCase.Repo, "gpu work", "", "agent-smith")
	e.waitCase(gpuCase, g, lifecycle.Enqueued)
	// Pushed after the gpu request: a consumer taking from one FIFO queue
	// would have run the gpu ticket first.
	n := e.sim.CreateIssue(cpuCase.Repo, "cpu work", "", "agent-smith")
	e.waitCase(cpuCase, n, lifecycle.Done)
	if s, starts := e.stateOf(gpuCase, g), e.startsOf(gpuCase, g); s != lifecycle.Enqueued || starts != 0 {
		t.Fatalf("gpu ticket %s with %d starts on a default-only fleet; want enqueued, never started", s, starts)
	}
	if q := e.gpuQueued(); len(q) != 1 || q[0].Pool != "gpu" {
		t.Fatalf("pool gpu's queue = %+v, want the gpu request", q)
	}

	eventually.Wait(t, 10*time.Second, "the metrics to report pool gpu unserved", func() bool {
		s := scrapeMetrics(t, a)
		unserved, _ := s.value("agentsmith_pool_queued_unserved", map[string]string{"pool": "gpu"})
		gpu, okG := s.value("agentsmith_pool_consumers", map[string]string{"pool": "gpu"})
		def, _ := s.value("agentsmith_pool_consumers", map[string]string{"pool": "default"})
		return unserved == 1 && okG && gpu == 0 && def == 1
	})
	var st statuspage.Status
	if err := json.Unmarshal([]byte(body(t, a, "http://"+a.AdminAddr()+"/status.json")), &st); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(st.Pools, func(p ops.Pool) bool { return p.Name == "gpu" })
	if i < 0 || !st.Pools[i].Unserved() || st.Pools[i].Waiting != 1 {
		t.Fatalf("status.json pools = %+v, want gpu unserved with 1 waiting", st.Pools)
	}
	if page := body(t, a, "http://"+a.AdminAddr()+"/status"); !strings.Contains(page, `id="pools"`) ||
		!strings.Contains(page, "its requests wait for a replica with this pool in consumer.pools") {
		t.Fatalf("the status page does not show pool gpu unserved:\n%s", page)
	}

	e.startDaemon(e.poolConfig("replica-b", "", []string{"gpu"}, config.RoleConsumer))
	e.waitCase(gpuCase, g, lifecycle.Done)
	if got := e.runners(gpuCase, g); !slices.Equal(got, []string{"replica-b"}) {
		t.Fatalf("gpu ticket ran on %q, want replica-b only", got)
	}
	eventually.Wait(t, 10*time.Second, "the metrics to show pool gpu served", func() bool {
		s := scrapeMetrics(t, a)
		unserved, _ := s.value("agentsmith_pool_queued_unserved", map[string]string{"pool": "gpu"})
		gpu, _ := s.value("agentsmith_pool_consumers", map[string]string{"pool": "gpu"})
		return unserved == 0 && gpu == 1
	})
}

// The repairs put a gpu request back into pool gpu's queue, never the
// default pool's, where the live default replica would take it: the
// EnqueuedReconciler's re-push of a lost request, a gpu replica's
// hand-back on shutdown, and a retry promoted from the delayed set.
func TestPoolSurvivesRepairs(t *testing.T) {
	e := newEnv(t)
	const retry = "      retry: {exit_codes: [7], backoff: {initial: 200ms, max: 400ms, jitter: 0.1}}\n"
	e.startDaemon(e.poolConfig("replica-a", retry, nil))
	rdb := e.redis.Client(t)
	g := e.sim.CreateIssue(gpuCase.Repo, "hold gpu work", "", "agent-smith")
	e.waitCase(gpuCase, g, lifecycle.Enqueued)
	eventually.Wait(t, 10*time.Second, "the gpu request in pool gpu's queue", func() bool { return len(e.gpuQueued()) == 1 })

	// Lost request: the reconciler re-pushes it into pool gpu.
	lost := e.gpuQueued()[0].ID
	if err := rdb.Del(t.Context(), keys.PoolQueue("gpu")).Err(); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 20*time.Second, "the reconciler to re-push into pool gpu", func() bool {
		q := e.gpuQueued()
		return len(q) == 1 && q[0].ID != lost && q[0].Source == lifecycle.SourceReconcile && q[0].Pool == "gpu"
	})
	if s := e.stateOf(gpuCase, g); s != lifecycle.Enqueued || e.startsOf(gpuCase, g) != 0 {
		t.Fatalf("after the re-push the gpu ticket is %s with %d starts; want enqueued, never started", s, e.startsOf(gpuCase, g))
	}

	// Hand-back: a gpu replica takes it ("hold" keeps it running) and
	// shuts down; the request goes back to pool gpu.
	b, err := daemon.New(e.poolConfig("replica-b", retry, []string{"gpu"}, config.RoleConsumer), daemon.Options{Logger: zaptest.NewLogger(t), OwnRedis: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	e.waitCase(gpuCase, g, lifecycle.InProgress)
	stop()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("replica-b did not stop")
	}
	e.waitCase(gpuCase, g, lifecycle.Enqueued)
	eventually.Wait(t, 10*time.Second, "the hand-back in pool gpu's queue", func() bool {
		q := e.gpuQueued()
		return len(q) == 1 && q[0].Source == lifecycle.SourceHandBack && q[0].Pool == "gpu"
	})
	if got := e.runners(gpuCase, g); !slices.Equal(got, []string{"replica-b"}) {
		t.Fatalf("runs after the hand-back: %q, want replica-b's only", got)
	}

	// Retry: replica-c serves gpu. It takes the handed-back ticket
	// (held until the gate opens) and a "flaky" one whose every attempt
	// fails: each retry waits out its backoff in the delayed set and is
	// promoted into pool gpu, so replica-c runs all three attempts.
	e.startDaemon(e.poolConfig("replica-c", retry, []string{"gpu"}, config.RoleConsumer))
	f := e.sim.CreateIssue(gpuCase.Repo, "flaky gpu work", "", "agent-smith")
	e.waitCase(gpuCase, f, lifecycle.Failed)
	if got := e.runners(gpuCase, f); !slices.Equal(got, []string{"replica-c", "replica-c", "replica-c"}) {
		t.Fatalf("the flaky gpu ticket's attempts ran on %q, want replica-c's three", got)
	}
	e.openGate()
	e.waitCase(gpuCase, g, lifecycle.Done)
	if got := e.runners(gpuCase, g); !slices.Equal(got, []string{"replica-b", "replica-c"}) {
		t.Fatalf("gpu ticket ran on %q; want replica-b then replica-c", got)
	}
}
