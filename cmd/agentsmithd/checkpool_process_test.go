package main_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/simcases"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// A deployment whose stage names a pool no replica serves, on every
// platform: a daemon process serves a project whose implement stage runs
// in pool gpu. The ticket's plan runs, its implement request waits in
// pool gpu's queue, and `agentsmithd check` on the same config exits 1,
// its pool row failing with the pool named and what to start.
func TestCheckReportsAStagePoolWithoutReplicas(t *testing.T) {
	const token = "process-test-token"
	stages := "      stages: [{name: plan}, {name: implement, pool: gpu}, {name: test}]\n"
	for _, pc := range simcases.All {
		t.Run(pc.Name, func(t *testing.T) {
			w := newProcWorld(t, pc)
			w.sim.CreateIssue(pc.Repo, "Stage me", "", "agent-smith")
			bin := daemonBinary(t)
			w.serve(bin, "replica-a", token, w.daemonYAML("replica-a", outcomeTimings, "true", "", stages))
			rdb := w.redis.Client(t)
			eventually.Wait(t, 30*time.Second, "the implement request in pool gpu's queue", func() bool {
				vals, _ := rdb.LRange(t.Context(), keys.PoolQueue("gpu"), 0, -1).Result()
				if len(vals) != 1 {
					return false
				}
				req, err := lifecycle.DecodeRequest([]byte(vals[0]))
				return err == nil && req.Stage == "implement" && req.Pool == "gpu"
			})

			cmd := exec.Command(bin, "check", "-c", filepath.Join(w.dir, "replica-a.yaml"), "-o", "json", "--timeout", "10s")
			cmd.Env = append(os.Environ(), "GH_TOKEN="+token)
			out, err := cmd.Output()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("check: %v, want exit status 1\n%s", err, out)
			}
			if strings.Contains(string(out), token) {
				t.Errorf("check printed the token:\n%s", out)
			}
			var rep struct {
				Projects []struct {
					Name   string                  `json:"name"`
					Checks []platforms.CheckResult `json:"checks"`
				} `json:"projects"`
			}
			if err := json.Unmarshal(out, &rep); err != nil || len(rep.Projects) != 1 {
				t.Fatalf("check's report: %v, %d projects\n%s", err, len(rep.Projects), out)
			}
			checks := rep.Projects[0].Checks
			i := slices.IndexFunc(checks, func(c platforms.CheckResult) bool { return c.Name == "pool" })
			if i < 0 || checks[i].Status != platforms.CheckFail ||
				checks[i].Detail != "pool gpu: 1 request(s) wait and no live replica serves the pool" ||
				checks[i].Fix != `start a replica with the consumer role and "gpu" in consumer.pools` {
				t.Errorf("check's rows %+v, want the pool row failing for pool gpu", checks)
			}
		})
	}
}
