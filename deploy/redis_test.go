package deploy_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gopkg.in/yaml.v3"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/pkg/redisserver"
)

// redisSetup is how one deployment starts Redis: the container's command,
// its health check, the redis.conf it mounts, and where the password file
// and the config file appear inside the container.
type redisSetup struct {
	name       string
	command    []string // sh -c SCRIPT
	probe      []string // sh -c SCRIPT
	conf       string   // path in the repository
	secretPath string   // the password file inside the container
}

func redisSetups(t *testing.T) []redisSetup {
	t.Helper()
	var k8s redisSetup
	for _, doc := range yamlDocs(t, "kubernetes/redis.yaml") {
		if doc["kind"] != "StatefulSet" {
			continue
		}
		var sts struct {
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Command        []string
							ReadinessProbe struct{ Exec struct{ Command []string } } `yaml:"readinessProbe"`
						}
					}
				}
			}
		}
		remarshal(t, doc, &sts)
		c := sts.Spec.Template.Spec.Containers[0]
		k8s = redisSetup{name: "kubernetes/redis.yaml", command: c.Command, probe: c.ReadinessProbe.Exec.Command,
			conf: "kubernetes/redis.conf", secretPath: "/secrets/redis-password"}
	}
	var compose struct {
		Services map[string]struct {
			Command     []string
			Healthcheck struct{ Test []string }
		}
	}
	remarshal(t, yamlDocs(t, "docker-compose.yml")[0], &compose)
	r := compose.Services["redis"]
	if len(r.Healthcheck.Test) > 0 && r.Healthcheck.Test[0] == "CMD" {
		r.Healthcheck.Test = r.Healthcheck.Test[1:]
	}
	// Compose turns $$ into $ before the container sees it.
	unescape := func(argv []string) []string {
		out := make([]string, len(argv))
		for i, a := range argv {
			out[i] = strings.ReplaceAll(a, "$$", "$")
		}
		return out
	}
	return []redisSetup{k8s, {name: "docker-compose.yml", command: unescape(r.Command), probe: unescape(r.Healthcheck.Test),
		conf: "compose/redis.conf", secretPath: "/run/secrets/redis_password"}}
}

func remarshal(t *testing.T, in, out any) {
	t.Helper()
	b, err := yaml.Marshal(in)
	if err == nil {
		err = yaml.Unmarshal(b, out)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// Redis in every deployment reads its settings from a config file: a memory
// cap with a volatile eviction policy (de-dup records of a webhook flood
// are evicted, never the queue), AOF, and a password that is on no command
// line. Each deployment's own start script and health check run here against
// a real redis-server, with only the container paths moved into a temporary
// directory: the server must refuse an unauthenticated client, take the
// password from the secret file, and show no password in its argv.
func TestRedisConfigAndPasswordOffTheCommandLine(t *testing.T) {
	bin, err := redisserver.FindBinary()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatal("redis-cli (the health checks use it) is not in PATH")
	}
	for _, s := range redisSetups(t) {
		t.Run(s.name, func(t *testing.T) {
			if len(s.command) != 3 || s.command[0] != "sh" || s.command[1] != "-c" || len(s.probe) != 3 || s.probe[0] != "sh" {
				t.Fatalf("want command and health check as [sh -c SCRIPT], got %q and %q", s.command, s.probe)
			}
			for _, argv := range [][]string{s.command, s.probe} {
				for _, a := range argv {
					if strings.Contains(a, "requirepass") && !strings.Contains(a, "> /run/redis/auth.conf") ||
						strings.Contains(a, "redis-cli -a") || strings.Contains(a, "--pass") {
						t.Errorf("a password on a command line: %q", a)
					}
				}
			}
			conf, err := os.ReadFile(s.conf)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"\nmaxmemory ", "\nmaxmemory-policy volatile-lru\n", "\nappendonly yes\n", "\ninclude /run/redis/auth.conf\n"} {
				if !bytes.Contains(conf, []byte(want)) {
					t.Errorf("%s lacks %q", s.conf, strings.TrimSpace(want))
				}
			}
			if regexp.MustCompile(`(?m)^\s*requirepass`).Match(conf) {
				t.Errorf("%s holds requirepass itself", s.conf)
			}

			const password = "s3cret-Pass.word_42"
			srv := startRedisAsDeployed(t, s, bin, conf, password)
			ctx := context.Background()
			anon := redis.NewClient(&redis.Options{Addr: srv.addr, MaxRetries: -1})
			defer anon.Close()
			if err := anon.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
				t.Errorf("PING without the password: %v, want NOAUTH", err)
			}
			rdb := redis.NewClient(&redis.Options{Addr: srv.addr, Password: password})
			defer rdb.Close()
			if err := rdb.Ping(ctx).Err(); err != nil {
				t.Fatalf("PING with the password: %v", err)
			}
			for k, want := range map[string]string{"maxmemory-policy": "volatile-lru", "appendonly": "yes"} {
				got, err := rdb.ConfigGet(ctx, k).Result()
				if err != nil || got[k] != want {
					t.Errorf("CONFIG GET %s = %v (%v), want %s", k, got, err, want)
				}
			}
			cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", srv.pid))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(cmdline, []byte(password)) || !bytes.Contains(cmdline, []byte("redis-server")) {
				t.Errorf("redis-server's command line: %q", bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
			}
			if fi, err := os.Stat(filepath.Join(srv.dir, "run", "auth.conf")); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("auth.conf: %v, mode %v; want 0600", err, fi)
			}

			probe := exec.Command("sh", "-c", srv.rewrite(s.probe[2]))
			probe.Env = append(os.Environ(), "PATH="+srv.path)
			// redis-cli's default address is 127.0.0.1:6379; the container
			// port is moved to the test server's.
			probe.Args[2] = strings.ReplaceAll(probe.Args[2], "redis-cli ", "redis-cli -p "+strconv.Itoa(srv.port)+" ")
			if out, err := probe.CombinedOutput(); err != nil {
				t.Errorf("health check %q: %v: %s", probe.Args[2], err, out)
			}
			if err := os.WriteFile(srv.secret, []byte("wrong\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := probe.CombinedOutput(); err == nil {
				t.Errorf("health check passes with a wrong password: %s", out)
			}
		})
	}
}

// A password Redis's config parser would split or misread is refused at
// start with a message, instead of a Redis with a different password.
func TestRedisRefusesAPasswordItCannotQuote(t *testing.T) {
	bin, err := redisserver.FindBinary()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range redisSetups(t) {
		for _, bad := range []string{"two words", `quo"te`, "", "new\nline"} {
			srv := newRedisDir(t, s, bin, bad)
			cmd := exec.Command("sh", "-c", srv.rewrite(s.command[2]))
			cmd.Env = append(os.Environ(), "PATH="+srv.path)
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), "redis-password: empty, or characters other than") {
				t.Errorf("%s: password %q: %v: %s", s.name, bad, err, out)
			}
			if strings.Contains(string(out), bad) && bad != "" {
				t.Errorf("%s: the refusal prints the password: %s", s.name, out)
			}
		}
	}
}

type redisRun struct {
	dir, secret, path string
	port, pid         int
	addr              string
	rewrite           func(string) string
}

// newRedisDir lays out a container's paths under a temporary directory and
// returns how to rewrite a script to them.
func newRedisDir(t *testing.T, s redisSetup, bin, password string) *redisRun {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"run", "data"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r := &redisRun{dir: dir, secret: filepath.Join(dir, "secret"),
		path: filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")}
	if err := os.WriteFile(r.secret, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.rewrite = strings.NewReplacer(s.secretPath, r.secret, "/run/redis/", dir+"/run/",
		"/etc/redis/redis.conf", filepath.Join(dir, "redis.conf")).Replace
	return r
}

// startRedisAsDeployed runs the deployment's start script, with its config
// file's paths moved under a temporary directory and a free port appended.
func startRedisAsDeployed(t *testing.T, s redisSetup, bin string, conf []byte, password string) *redisRun {
	t.Helper()
	r := newRedisDir(t, s, bin, password)
	port, err := redisserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	r.port, r.addr = port, "127.0.0.1:"+strconv.Itoa(port)
	c := strings.NewReplacer("/run/redis/", r.dir+"/run/", "\ndir /data\n", "\ndir "+r.dir+"/data\n").Replace(string(conf))
	c += fmt.Sprintf("\nport %d\nbind 127.0.0.1\nsave \"\"\n", port)
	if err := os.WriteFile(filepath.Join(r.dir, "redis.conf"), []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", r.rewrite(s.command[2]))
	cmd.Env = append(os.Environ(), "PATH="+r.path)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	r.pid = cmd.Process.Pid // exec: the shell becomes redis-server
	eventually.Wait(t, 10*time.Second, "redis-server to listen", func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("redis exited: %v: %s", err, out.String())
		default:
		}
		rdb := redis.NewClient(&redis.Options{Addr: r.addr, Password: password, MaxRetries: -1})
		defer rdb.Close()
		return rdb.Ping(context.Background()).Err() == nil
	})
	return r
}
