package daemon

import (
	"testing"

	"github.com/agentsmithd/agentsmithd/config"
)

// Every consumer worker blocks on a pooled connection; the pool must leave
// room for claims, heartbeats and health checks beside them.
func TestPoolLeavesRoomBesideBlockedWorkers(t *testing.T) {
	for _, n := range []int{1, 4, 100, 500} {
		cfg := &config.Config{Roles: config.AllRoles, Consumer: config.Consumer{Concurrency: n}}
		if got := poolSize(cfg); got < n+10 {
			t.Errorf("concurrency %d: pool %d leaves fewer than 10 connections free", n, got)
		}
	}
}
