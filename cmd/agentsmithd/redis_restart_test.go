package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/simcases"
)

// redisRestartRecovery runs one replica with the shipped defaults until a
// ticket's pipeline runs, kills redis-server, keeps it down for down (the
// fault itself), restarts it empty, and returns the time from Redis
// answering again to the ticket's pipeline starting again.
func redisRestartRecovery(t *testing.T, down, timeout time.Duration) time.Duration {
	pc := simcases.GitHub
	w := newProcWorld(t, pc)
	w.start("replica-a", "")
	n := w.sim.CreateIssue(pc.Repo, "running when Redis dies", "", "agent-smith")
	id := pc.ID(n)
	eventually.Wait(t, 30*time.Second, "the pipeline to start", func() bool { return len(w.lines("start "+id+" ")) == 1 })
	w.redis.Kill()
	time.Sleep(down) // Redis unreachable: the fault itself, not synchronisation
	w.redis.Restart()
	up := time.Now()
	eventually.Wait(t, timeout, "the pipeline to start again after Redis came back empty", func() bool {
		return len(w.lines("start "+id+" ")) == 2
	})
	recovery := time.Since(up)
	// The first run was killed when its owner found its heartbeat gone;
	// open the gate so the second ends.
	_ = os.WriteFile(filepath.Join(w.dir, "gate"), nil, 0o644)
	return recovery
}

// TestRedisRestartRecoveryWithDefaults measures, on the real daemon process
// with the shipped defaults, how long a ticket whose run lost its heartbeat
// to a Redis restart (empty) waits before it runs again: Redis down 15 s
// while the pipeline runs, and Redis restarted at once. The figures are
// logged, not asserted; run with -v to read them.
func TestRedisRestartRecoveryWithDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("takes ~1 min")
	}
	for _, down := range []time.Duration{15 * time.Second, 0} {
		t.Run(fmt.Sprintf("down %s", down), func(t *testing.T) {
			d := redisRestartRecovery(t, down, 150*time.Second)
			t.Logf("Redis down %s, restarted empty → the ticket's pipeline running again: %s after Redis answered, with default settings",
				down, d.Round(10*time.Millisecond))
		})
	}
}
