package consumer_test

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runbox"
	"github.com/agentsmithd/agentsmithd/lifecycle/runguard"
	"github.com/agentsmithd/agentsmithd/pkg/runcg"
	"github.com/agentsmithd/agentsmithd/pkg/sandbox"
	"github.com/agentsmithd/agentsmithd/pkg/sandbox/sandboxtest"
)

// sandboxing is what a test executor's sandbox needs here; it skips where
// the machine cannot start one, naming what is missing.
func sandboxing(t *testing.T) *runbox.Config {
	t.Helper()
	return &runbox.Config{Exe: sandboxtest.Exe(t), UIDs: sandbox.DefaultRange}
}

// reachableRoot is a work root a run's leased uid may pass through.
func reachableRoot(t *testing.T) string {
	t.Helper()
	return filepath.Join(sandboxtest.ReachableDir(t), "work")
}

// attack is a pipeline that tries the roads back into the daemon from
// inside a run: Redis, the admin listener, and the network beyond the
// egress proxy's list. It prints what it reached and exits 0 when the
// allowed host answered through the proxy.
const attack = `
redis_host=${REDIS%:*}; redis_port=${REDIS##*:}
if exec 3<>/dev/tcp/$redis_host/$redis_port 2>/dev/null; then
  printf '*3\r\n$3\r\nSET\r\n$6\r\npwned:\r\n$%d\r\n%s\r\n' ${#AGENTSMITH_TICKET_ID} "$AGENTSMITH_TICKET_ID" >&3 && read -r -t 5 reply <&3 && echo "redis: $reply"
fi
admin_host=${ADMIN%:*}; admin_port=${ADMIN##*:}
if exec 4<>/dev/tcp/$admin_host/$admin_port 2>/dev/null; then echo "admin: reached"; fi
# The allowed host is this test's server on loopback, reached through the
# proxy by its IP rule (which takes 127.0.0.1 out of NO_PROXY).
curl -fsS --max-time 10 "http://$ALLOWED/" && echo " allowed: reached"
# A rule names Redis's address too: the proxy still never opens it.
curl -sS --max-time 10 -o /dev/null -w 'redis via proxy: %{http_code}\n' "http://$REDIS/"
curl -sS --max-time 10 -o /dev/null -w 'evil: %{http_code}\n' http://evil.example/
exit 3
`

// A sandboxed pipeline cannot reach Redis or the admin listener, reaches
// the host its project allows through the egress proxy, and is refused the
// others, which the failure comment names with the line that allows
// them. The control runs the same pipeline without a sandbox: it SETs the
// key in Redis and reaches the admin listener.
func TestSandboxedPipelineHasNoRoadBack(t *testing.T) {
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		t.Skip("the pipeline needs curl (/usr/bin/curl)")
	}
	sb := sandboxing(t)
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "admin") }))
	t.Cleanup(admin.Close)
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "upstream-ok") }))
	t.Cleanup(allowed.Close)
	allowedHost, allowedPort, _ := net.SplitHostPort(strings.TrimPrefix(allowed.URL, "http://"))

	var refused countSet
	run := func(t *testing.T, sb *runbox.Config, withGuard bool) (*lifecycletest.World, int) {
		w := lifecycletest.New(t, 1)
		p := w.Projects[lifecycletest.Project]
		p.Pipeline.Command = []string{"/bin/bash", "-c", attack}
		p.Pipeline.Env = map[string]string{"REDIS": w.Redis.Addr(), "ADMIN": strings.TrimPrefix(admin.URL, "http://"),
			"ALLOWED": strings.TrimPrefix(allowed.URL, "http://"), "PATH": "/usr/bin:/bin"}
		var port int
		_, _ = fmt.Sscan(allowedPort, &port)
		redisHost, redisPort, _ := net.SplitHostPort(w.Redis.Addr())
		var rport int
		_, _ = fmt.Sscan(redisPort, &rport)
		p.Pipeline.Sandbox.Allow = []lifecycle.AllowRule{{Host: allowedHost, Ports: []int{port}}, {Host: redisHost, Ports: []int{rport}}}
		if sb != nil {
			own := *sb
			own.Listeners = func() []netip.AddrPort { return []netip.AddrPort{netip.MustParseAddrPort(w.Redis.Addr())} }
			own.Refused = func(project, reason string) { refused.Add(project + " " + reason) }
			sb = &own
		}
		cfg := consumer.ExecutorConfig{Instance: "exec-1", Concurrency: 1, HeartbeatTTL: 10 * time.Second, HeartbeatRenew: 5 * time.Second,
			KillGrace: 200 * time.Millisecond, WorkDir: reachableRoot(t), TakeWait: 100 * time.Millisecond,
			CancelCheck: time.Hour, Logger: zaptest.NewLogger(t), Sandbox: sb}
		if withGuard {
			exe, _ := os.Executable()
			cfg.Guard = &runguard.Launcher{Exe: exe, Redis: runguard.Redis{Addrs: []string{w.Redis.Addr()}}, Check: 100 * time.Millisecond}
		}
		rec := &lifecycletest.Recorder{}
		cfg.Observer = rec
		ex := consumer.NewExecutor(w.RDB, w.Queue, w.Projects, cfg)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = ex.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		n := w.ClaimIssue(t, "attack")
		w.WaitOutcome(t, rec, n, lifecycle.Failed, "failed")
		return w, n
	}

	t.Run("control without a sandbox", func(t *testing.T) {
		w, n := run(t, nil, false)
		if got, _ := w.RDB.Get(t.Context(), "pwned:").Result(); got != lifecycletest.Ref(n).ID {
			t.Errorf("the pipeline did not SET pwned: in Redis unsandboxed: the attack proves nothing\n%s", w.Comments(t, n))
		}
		if c := strings.Join(w.Comments(t, n), "\n"); !strings.Contains(c, "admin: reached") {
			t.Errorf("the admin listener was not reached unsandboxed:\n%s", c)
		}
	})
	for _, guarded := range []bool{false, true} {
		t.Run(fmt.Sprintf("sandboxed guarded=%v", guarded), func(t *testing.T) {
			w, n := run(t, sb, guarded)
			if got, _ := w.RDB.Exists(t.Context(), "pwned:").Result(); got != 0 {
				t.Error("a sandboxed pipeline wrote to Redis")
			}
			c := strings.Join(w.Comments(t, n), "\n")
			for _, bad := range []string{"redis: ", "admin: reached"} {
				if strings.Contains(c, bad) {
					t.Errorf("the sandboxed pipeline printed %q:\n%s", bad, c)
				}
			}
			for _, kind := range []string{"app not_allowed", "app address"} {
				if refused.Get(kind) == 0 {
					t.Errorf("no %q refusal counted: %v", kind, refused.All())
				}
			}
			for _, want := range []string{"upstream-ok allowed: reached", "evil: 403", "refused GET evil.example:80", "sandbox.network.allow",
				"redis via proxy: 502", "the daemon's own listener or Redis"} {
				if !strings.Contains(c, want) {
					t.Errorf("the failure comment lacks %q:\n%s", want, c)
				}
			}
		})
	}
}

// A run a sandbox limit ends fails with the limit named on the ticket and
// counted; the same pipeline under no memory limit succeeds (the control).
func TestSandboxedRunKilledByALimitSaysWhich(t *testing.T) {
	sb := sandboxing(t)
	cg, err := runcg.Detect()
	if err != nil {
		t.Skipf("no run cgroups: %v", err)
	}
	if err := cg.EnableLimits(); err != nil {
		t.Skipf("no cgroup limits: %v", err)
	}
	mem, pids, cpu, where := cg.Controllers()
	if !mem {
		t.Skipf("no memory controller (%s)", where)
	}
	sb.Controllers = runbox.Controllers{Memory: mem, Processes: pids, CPU: cpu}
	var kills atomic.Int32
	sb.LimitKilled = func(project, limit string) {
		if limit == "memory" {
			kills.Add(1)
		}
	}
	// 64 MiB held in a shell variable.
	hog := `x=$(head -c 67108864 /dev/zero | tr '\0' a); echo "held ${#x} bytes"`
	run := func(t *testing.T, limit int64) (*lifecycletest.World, int, *lifecycletest.Recorder) {
		w := lifecycletest.New(t, 1)
		p := w.Projects[lifecycletest.Project]
		p.Pipeline.Command = []string{"/bin/sh", "-c", hog}
		p.Pipeline.Env = map[string]string{"PATH": "/usr/bin:/bin"}
		p.Pipeline.Sandbox.Limits = lifecycle.RunLimits{MemoryBytes: limit}
		rec := &lifecycletest.Recorder{}
		ex := consumer.NewExecutor(w.RDB, w.Queue, w.Projects, consumer.ExecutorConfig{Instance: "exec-1", Concurrency: 1,
			HeartbeatTTL: 10 * time.Second, HeartbeatRenew: 5 * time.Second, KillGrace: 200 * time.Millisecond,
			WorkDir: reachableRoot(t), TakeWait: 100 * time.Millisecond, CancelCheck: time.Hour, Logger: zaptest.NewLogger(t),
			Sandbox: sb, Cgroups: cg, Observer: rec})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = ex.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		return w, w.ClaimIssue(t, "hog"), rec
	}
	t.Run("control without a limit", func(t *testing.T) {
		w, n, rec := run(t, lifecycle.Unlimited)
		w.WaitOutcome(t, rec, n, lifecycle.Done, "succeeded")
	})
	t.Run("under 32 MiB", func(t *testing.T) {
		w, n, rec := run(t, 32<<20)
		w.WaitOutcome(t, rec, n, lifecycle.Failed, "failed")
		if c := strings.Join(w.Comments(t, n), "\n"); !strings.Contains(c, "memory limit 32 MiB reached") {
			t.Errorf("the failure comment does not name the limit:\n%s", c)
		}
		if kills.Load() != 1 {
			t.Errorf("limit kills counted: %d, want 1", kills.Load())
		}
	})
}

// countSet counts strings from several goroutines.
type countSet struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *countSet) Add(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[k]++
}

func (c *countSet) Get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

func (c *countSet) All() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}
