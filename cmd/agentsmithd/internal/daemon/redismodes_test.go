package daemon_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// The daemon against the Redis deployments other than one plain server.
// Cluster mode hash-tags every key, a process-wide setting, so its
// end-to-end test lives in its own test binary (./clustertest).

// webhookToDone triggers one GitHub ticket and checks it went
// pending → enqueued → in-progress → done with one pipeline start.
func webhookToDone(t *testing.T, e *env) {
	t.Helper()
	e.startDaemon(e.config("replica-a", ""))
	n := e.sim.CreateIssue(e.repo, "Redis mode ticket", "body", "agent-smith")
	e.waitState(n, 20*time.Second, lifecycle.Done)
	if got := e.starts(n); len(got) != 1 {
		t.Errorf("pipeline started %d times, want 1: %q", len(got), got)
	}
	if path, want := e.lifecyclePath(n), []string{"pending→enqueued", "enqueued→in-progress", "in-progress→done"}; !slices.Equal(path, want) {
		t.Errorf("transitions = %q, want %q", path, want)
	}
}

func TestRedisSentinelWebhookToDone(t *testing.T) {
	e := newEnv(t)
	s := redistest.StartSentinel(t, redistest.SentinelOptions{Password: testRedisPassword, SentinelPassword: testSentinelPassword})
	e.redisYAML = fmt.Sprintf("{mode: sentinel, addrs: [%q], master_name: %s, password_env: E2E_REDIS_PASSWORD, sentinel_password_env: E2E_SENTINEL_PASSWORD}",
		s.Sentinel.Addr(), redistest.SentinelMaster)
	webhookToDone(t, e)
	// The state lives on the master the sentinel names, under the
	// specification's key names.
	if n, err := s.Master.Client(t).Exists(context.Background(), keys.Epoch()).Result(); err != nil || n != 1 {
		t.Errorf("%s on the master: exists=%d, %v", keys.Epoch(), n, err)
	}
}

func TestRedisACLUserOverTLSWebhookToDone(t *testing.T) {
	e := newEnv(t)
	files := redistest.WriteTLSFiles(t)
	s := redistest.StartSpec(t, redistest.Spec{Args: files.ServerArgs(), TLS: files.ClientConfig(t)})
	// A user restricted to the daemon's keys; the default user is turned
	// off, so only the configured username and password get in.
	admin := s.Client(t)
	ctx := context.Background()
	if err := admin.Do(ctx, "acl", "setuser", "agentsmith", "on", ">"+testRedisPassword, "~agentsmith:*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.Do(ctx, "acl", "setuser", "default", "off").Err(); err != nil {
		t.Fatal(err)
	}
	e.redisYAML = fmt.Sprintf("{addr: %q, username: agentsmith, password_env: E2E_REDIS_PASSWORD, tls: {enabled: true, ca_file: %q, cert_file: %q, key_file: %q}}",
		s.Addr(), files.CA, files.ClientCert, files.ClientKey)
	webhookToDone(t, e)
}

// After the master dies the sentinel promotes the replica; the daemon
// follows it without a restart and the next ticket runs to Done.
func TestRedisSentinelFailover(t *testing.T) {
	e := newEnv(t)
	s := redistest.StartSentinel(t, redistest.SentinelOptions{})
	e.redisYAML = fmt.Sprintf("{mode: sentinel, addrs: [%q], master_name: %s}", s.Sentinel.Addr(), redistest.SentinelMaster)
	e.startDaemon(e.config("replica-a", ""))
	first := e.sim.CreateIssue(e.repo, "first ticket", "", "agent-smith")
	e.waitState(first, 20*time.Second, lifecycle.Done)

	s.Master.Kill()
	eventually.Wait(t, 30*time.Second, "sentinel to promote the replica", func() bool {
		return s.MasterAddr(t, "") == s.Replica.Addr()
	})
	second := e.sim.CreateIssue(e.repo, "second ticket", "", "agent-smith")
	e.waitState(second, 30*time.Second, lifecycle.Done)
	if got := e.starts(second); len(got) != 1 {
		t.Errorf("pipeline started %d times, want 1: %q", len(got), got)
	}
}
