package daemon_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/statuspage"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/ops"
)

// stagePoolConfig is replica instance's config for a project with the
// stages plan → implement → test, implement in pool gpu, each running
// stageScript; pools are its consumer.pools.
func (e *env) stagePoolConfig(instance string, pools []string, roles ...string) *config.Config {
	e.t.Helper()
	script := filepath.Join(e.dir, "stage.sh")
	if err := os.WriteFile(script, []byte(stageScript), 0o755); err != nil {
		e.t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("      stages:\n")
	for _, s := range threeStages {
		pool := ""
		if s == "implement" {
			pool = ", pool: gpu"
		}
		fmt.Fprintf(&b, "        - {name: %s, command: [sh, %q]%s}\n", s, script, pool)
	}
	cfg, err := config.Parse([]byte(e.withPipeline(instance, b.String())), lookupEnv)
	if err != nil {
		e.t.Fatalf("config: %v", err)
	}
	cfg.Consumer.Pools = pools
	if len(roles) > 0 {
		cfg.Roles = roles
	}
	return cfg
}

// A stage with its own pool runs on a replica of that pool: plan and test
// on the default replica, implement on the gpu one. Until a gpu replica
// lives, the implement request waits in pool gpu's queue and the status
// page and the metrics report the pool unserved.
func TestStagePoolRunsOnItsReplica(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		a := e.startDaemon(e.stagePoolConfig("replica-a", nil))
		eventually.Wait(t, 10*time.Second, "the metrics to list the stage's pool gpu without consumers", func() bool {
			s := scrapeMetrics(t, a)
			gpu, ok := s.value("agentsmith_pool_consumers", map[string]string{"pool": "gpu"})
			return ok && gpu == 0
		})
		n := e.sim.CreateIssue(e.repo, "Stage me", "", "agent-smith")
		eventually.Wait(t, 30*time.Second, "the implement request in pool gpu's queue", func() bool {
			q := e.gpuQueued()
			return len(q) == 1 && q[0].Stage == "implement" && q[0].Pool == "gpu" && q[0].Source == lifecycle.SourceStage
		})
		if got := e.runLines("stage", n); !slices.Equal(got, []string{"plan 1 prev="}) {
			t.Fatalf("stage runs %q before a gpu replica lives, want plan only", got)
		}
		if s := e.waitState(n, 10*time.Second, lifecycle.Enqueued); s != lifecycle.Enqueued {
			t.Fatalf("state %s while implement waits, want enqueued", s)
		}
		eventually.Wait(t, 10*time.Second, "the metrics to report pool gpu unserved", func() bool {
			unserved, _ := scrapeMetrics(t, a).value("agentsmith_pool_queued_unserved", map[string]string{"pool": "gpu"})
			return unserved == 1
		})
		var st statuspage.Status
		if err := json.Unmarshal([]byte(body(t, a, "http://"+a.AdminAddr()+"/status.json")), &st); err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(st.Pools, func(p ops.Pool) bool { return p.Name == "gpu" }); i < 0 || !st.Pools[i].Unserved() || st.Pools[i].Waiting != 1 {
			t.Fatalf("status.json pools = %+v, want gpu unserved with 1 waiting", st.Pools)
		}

		e.startDaemon(e.stagePoolConfig("replica-b", []string{"gpu"}, config.RoleConsumer))
		e.waitState(n, 60*time.Second, lifecycle.Done)
		if got, want := e.runners(e.pc, n), []string{"replica-a", "replica-b", "replica-a"}; !slices.Equal(got, want) {
			t.Errorf("stages plan, implement, test ran on %q, want %q", got, want)
		}
		if got := e.runLines("stage", n); len(got) != 3 || !strings.HasPrefix(got[1], "implement 1 ") {
			t.Errorf("stage runs %q, want plan, implement, test once each", got)
		}
	})
}
