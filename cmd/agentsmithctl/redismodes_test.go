package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle/ops"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// mainEnv makes the test binary run agentsmithctl's main instead of the
// tests: pkg/keys fixes the key layout once per process, so a command
// against a cluster (hash-tagged keys) runs in a process of its own.
const mainEnv = "AGENTSMITHCTL_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// ctlProcess runs agentsmithctl as a process of its own with the config
// at path and returns its stdout; it fails the test on an error or on
// anything printed to stderr (go-redis's own log lines about sentinels and
// cluster nodes are not the operator's business).
func ctlProcess(t *testing.T, path string, argv ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-c", path}, argv...)...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("agentsmithctl %s: %v\nstdout: %s\nstderr: %s", strings.Join(argv, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// agentsmithctl reaches Redis as the daemon does in each mode: through the
// sentinels to the current master, and to a cluster with the hash-tagged
// key layout the daemon writes there.
func TestRedisModes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode string
		// start returns the redis section and a client of the node that
		// holds the keys.
		start func(t *testing.T) (string, redis.UniversalClient)
		// paused is the pause key as the daemon writes it in this mode.
		paused string
	}{
		{"sentinel", func(t *testing.T) (string, redis.UniversalClient) {
			s := redistest.StartSentinel(t, redistest.SentinelOptions{})
			return fmt.Sprintf("{mode: sentinel, addrs: [%q], master_name: %s}", s.Addrs()[0], redistest.SentinelMaster), s.Master.Client(t)
		}, keys.Prefix + "paused:app"},
		{"cluster", func(t *testing.T) (string, redis.UniversalClient) {
			c := redistest.StartCluster(t, 3)
			return fmt.Sprintf("{mode: cluster, addrs: [%q]}", c.Addrs()[0]), c.Client(t)
		}, keys.TaggedPrefix + "paused:app"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			section, rdb := tc.start(t)
			path := filepath.Join(t.TempDir(), "agentsmithd.yaml")
			yml := "redis: " + section + `
projects:
  - name: app
    platform: github
    repo: acme/app
    token_env: CTL_MODES_TOKEN
    polling: {enabled: true}
    pipeline: {command: ["true"]}
`
			if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
				t.Fatal(err)
			}
			ctlProcess(t, path, "pause", "app")
			if n, err := rdb.Exists(context.Background(), tc.paused).Result(); err != nil || n != 1 {
				t.Fatalf("after pause, %s exists %d (%v), want 1", tc.paused, n, err)
			}
			var snap ops.Snapshot
			out := ctlProcess(t, path, "status", "-o", "json")
			if err := json.Unmarshal([]byte(out), &snap); err != nil {
				t.Fatalf("status -o json: %v\n%s", err, out)
			}
			if len(snap.Paused) != 1 || snap.Paused[0].Project != "app" {
				t.Errorf("status lists paused %+v, want app", snap.Paused)
			}
			if out := ctlProcess(t, path, "resume", "app"); !strings.Contains(out, "resumed app") {
				t.Errorf("resume: %s", out)
			}
			if n, _ := rdb.Exists(context.Background(), tc.paused).Result(); n != 0 {
				t.Errorf("after resume, %s still exists", tc.paused)
			}
		})
	}
}
