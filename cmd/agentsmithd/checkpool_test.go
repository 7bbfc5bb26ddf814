package main

import (
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// check's pool row: a project outside the default pool is told whether a
// live replica serves its pool, and any project whose pool has requests
// waiting with nobody to take them fails.
func TestCheckPoolWithoutConsumer(t *testing.T) {
	w := newCheckWorld(t)
	w.sim.SetAccess(checkToken, trackersim.Access{Role: trackersim.RoleAdmin, Scopes: []string{"repo"}})
	rdb := w.redis.Client(t)
	projects := []string{w.githubProject("plain", "acme/app", "CHECK_TOKEN"),
		w.project("trainer", "github", "/github/", "acme/app", "CHECK_TOKEN", "    pool: gpu\n")}

	code, rep, out := w.run(t, projects...)
	wantStatuses(t, rep, "trainer", map[string]string{"pool": "warn"})
	wantStatuses(t, rep, "plain", map[string]string{"pool": ""})
	if code != 0 {
		t.Errorf("exit %d with nothing waiting, want 0\n%s", code, out)
	}

	push := func(key, pool string) {
		req := lifecycle.PipelineRequest{ID: "r-" + pool, Ref: platforms.Ref{Platform: "github", Project: "x", ID: "acme/app#1"},
			Attempt: 1, EnqueuedAt: time.Now(), Pool: pool}
		if err := rdb.RPush(t.Context(), key, req.Encode()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	push(keys.PoolQueue("gpu"), "gpu")
	code, rep, out = w.run(t, projects...)
	wantStatuses(t, rep, "trainer", map[string]string{"pool": "fail"})
	if code != 1 || !strings.Contains(out, "pool gpu: 1 request(s) wait and no live replica serves the pool") {
		t.Errorf("exit %d, want 1 and the unserved pool named:\n%s", code, out)
	}

	// A live gpu replica (its liveness key) serves it; the default pool's
	// waiting request has no consumer now.
	if err := rdb.Set(t.Context(), keys.Instance("gpu-1"), lifecycle.Replica{ID: "gpu-1", Pools: []string{"gpu"}}.Encode(), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	push(keys.Queue(), "")
	code, rep, out = w.run(t, projects...)
	wantStatuses(t, rep, "trainer", map[string]string{"pool": "ok"})
	wantStatuses(t, rep, "plain", map[string]string{"pool": "fail"})
	if code != 1 || !strings.Contains(out, "served by gpu-1") || !strings.Contains(out, "pool default: 1 request(s) wait") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// A stage's pool is one of the project's pools: check reports it while no
// replica serves it, even when the project's own pool is served, and
// fails once its requests wait.
func TestCheckPoolOfAStage(t *testing.T) {
	w := newCheckWorld(t)
	w.sim.SetAccess(checkToken, trackersim.Access{Role: trackersim.RoleAdmin, Scopes: []string{"repo"}})
	rdb := w.redis.Client(t)
	staged := strings.Replace(w.githubProject("staged", "acme/app", "CHECK_TOKEN"), `pipeline: {command: ["true"]}`,
		`pipeline: {command: ["true"], stages: [{name: plan}, {name: implement, pool: gpu}]}`, 1)
	if err := rdb.Set(t.Context(), keys.Instance("cpu-1"), lifecycle.Replica{ID: "cpu-1", Pools: []string{lifecycle.DefaultPool}}.Encode(), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}

	code, rep, out := w.run(t, staged)
	wantStatuses(t, rep, "staged", map[string]string{"pool": "warn"})
	if code != 0 || !strings.Contains(out, "pool gpu: no live replica serves the pool yet") {
		t.Errorf("exit %d, want 0 and the stage's pool named:\n%s", code, out)
	}

	req := lifecycle.PipelineRequest{ID: "r-gpu", Ref: platforms.Ref{Platform: "github", Project: "staged", ID: "acme/app#1"},
		Attempt: 1, EnqueuedAt: time.Now(), Stage: "implement", Pool: "gpu"}
	if err := rdb.RPush(t.Context(), keys.PoolQueue("gpu"), req.Encode()).Err(); err != nil {
		t.Fatal(err)
	}
	code, rep, out = w.run(t, staged)
	wantStatuses(t, rep, "staged", map[string]string{"pool": "fail"})
	if code != 1 || !strings.Contains(out, "pool gpu: 1 request(s) wait and no live replica serves the pool") {
		t.Errorf("exit %d, want 1 and the unserved stage pool named:\n%s", code, out)
	}
}
