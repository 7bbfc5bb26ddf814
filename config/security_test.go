package config

import (
	"strings"
	"testing"
)

// A project name is a directory under consumer.work_dir: "." and ".." would
// put working directories outside it.
func TestProjectNameIsASafePathSegment(t *testing.T) {
	t.Parallel()
	base := oneProject + "    token_env: T\n"
	vars := map[string]string{"T": "t"}
	for _, name := range []string{"..", ".", "...", "a/b", `"a\u0000"`, `"a\nb"`} {
		got := parseErrs(t, strings.Replace(base, "name: p", "name: "+name, 1), vars)
		if len(got) != 1 || !strings.HasPrefix(got[0], "projects[0].name: must") {
			t.Errorf("name %s: %q", name, got)
		}
	}
	for _, name := range []string{"app", "a.b", "..app", "app-2_x"} {
		if _, err := Parse([]byte(strings.Replace(base, "name: p", "name: "+name, 1)), env(vars)); err != nil {
			t.Errorf("name %s refused: %v", name, err)
		}
	}
}

// The admin listener serves /metrics and the status page (ticket ids,
// private repository names): off loopback it needs the status token, and
// it never shares the webhook listener's port.
func TestAdminListenOffLoopbackNeedsStatusToken(t *testing.T) {
	t.Parallel()
	base := oneProject + "    token_env: T\n"
	vars := map[string]string{"T": "t", "ST": "status-token"}
	for _, addr := range []string{":9090", "0.0.0.0:9090", "10.0.0.5:9090", "[::]:9090", "example.com:9090"} {
		got := parseErrs(t, "admin_listen: \""+addr+"\"\n"+base, vars)
		if len(got) != 1 || !strings.HasPrefix(got[0], "admin_listen: "+addr+" is not a loopback address: set status.token") {
			t.Errorf("admin_listen %s without a token: %q", addr, got)
		}
		if _, err := Parse([]byte("admin_listen: \""+addr+"\"\nstatus: {token_env: ST}\n"+base), env(vars)); err != nil {
			t.Errorf("admin_listen %s with a token refused: %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:9090", "localhost:9090", "[::1]:9090", "127.0.0.2:0"} {
		if _, err := Parse([]byte("admin_listen: \""+addr+"\"\n"+base), env(vars)); err != nil {
			t.Errorf("loopback admin_listen %s refused: %v", addr, err)
		}
	}
	for _, c := range []struct{ listen, admin string }{{":8080", "127.0.0.1:8080"}, {"127.0.0.1:9090", "127.0.0.1:9090"}, {"0.0.0.0:9091", "[::1]:9091"}} {
		got := parseErrs(t, "listen: \""+c.listen+"\"\nadmin_listen: \""+c.admin+"\"\n"+base, vars)
		if len(got) != 1 || !strings.HasPrefix(got[0], "admin_listen: must not share a port with listen") {
			t.Errorf("listen %s, admin_listen %s: %q", c.listen, c.admin, got)
		}
	}
	for _, c := range []struct{ listen, admin string }{{"127.0.0.1:0", "127.0.0.1:0"}, {"10.0.0.5:9090", "127.0.0.1:9090"}} {
		if _, err := Parse([]byte("listen: \""+c.listen+"\"\nadmin_listen: \""+c.admin+"\"\n"+base), env(vars)); err != nil {
			t.Errorf("listen %s, admin_listen %s refused: %v", c.listen, c.admin, err)
		}
	}
	if got := parseErrs(t, "admin_listen: nope\n"+base, vars); len(got) != 1 || got[0] != `admin_listen: expected host:port such as "127.0.0.1:9090"` {
		t.Errorf("admin_listen nope: %q", got)
	}
}

// The webhook listener's connection caps and body deadline are bounded.
func TestWebhookConnectionLimits(t *testing.T) {
	t.Parallel()
	base := oneProject + "    token_env: T\n"
	vars := map[string]string{"T": "t"}
	got := parseErrs(t, "webhook: {max_connections: 10, max_connections_per_address: 20, body_timeout: -1s}\n"+base, vars)
	want := []string{"webhook.max_connections_per_address: must be at most webhook.max_connections (10)", "webhook.body_timeout: must be positive"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := parseErrs(t, "webhook: {max_connections: -1}\n"+base, vars); len(got) != 1 || !strings.HasPrefix(got[0], "webhook.max_connections: must be at least 1") {
		t.Errorf("max_connections -1: %q", got)
	}
}

// pipeline.run_as resolves names and numbers, and is refused where the
// daemon could not switch to it (not root) or where it does not resolve.
func TestPipelineRunAs(t *testing.T) {
	// run_as is the isolation of a daemon whose sandbox is off, which
	// needs a Redis password (sandbox_test.go).
	base := "sandbox: {mode: off}\nredis: {password_env: RP}\n" + oneProject + "    token_env: T\n"
	vars := map[string]string{"T": "t", "RP": "p"}
	withRunAs := func(v string) string {
		return strings.Replace(base, "pipeline: {command: [run]}", "pipeline: {command: [run], run_as: \""+v+"\"}", 1)
	}
	defer func(f func() int) { geteuid = f }(geteuid)
	geteuid = func() int { return 0 }
	for v, want := range map[string][2]uint32{"65534": {65534, 65534}, "65534:100": {65534, 100}, "root": {0, 0}, "0:0": {0, 0}} {
		cfg, err := Parse([]byte(withRunAs(v)), env(vars))
		if err != nil {
			t.Errorf("run_as %q refused as root: %v", v, err)
			continue
		}
		cred, err := cfg.Projects[0].Pipeline.RunAsCredential()
		if err != nil || cred == nil || cred.Uid != want[0] || cred.Gid != want[1] {
			t.Errorf("run_as %q = %+v, %v; want uid %d gid %d", v, cred, err, want[0], want[1])
		}
	}
	if got := parseErrs(t, withRunAs("no-such-user-agentsmith"), vars); len(got) != 1 || !strings.HasPrefix(got[0], "projects[0].pipeline.run_as: user") {
		t.Errorf("unknown user: %q", got)
	}
	geteuid = func() int { return 1000 }
	if got := parseErrs(t, withRunAs("65534"), vars); len(got) != 1 || !strings.Contains(got[0], "cannot start a pipeline as uid 65534") {
		t.Errorf("not root: %q", got)
	}
	if _, err := Parse([]byte(withRunAs("1000")), env(vars)); err != nil {
		t.Errorf("run_as the daemon's own uid refused: %v", err)
	}
}
