package main_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/readme"
	"github.com/agentsmithd/agentsmithd/pkg/redisserver"
)

// TestFirstProjectWalkthrough runs the sh blocks of the README's "Your
// first real project in five minutes", as written, in one bash: build,
// trackersim, redis-server, a pipeline script, a config, validate, serve, a
// labelled ticket, and waiting for Done. Only where things live and listen
// is chosen by the test (the variables the first block defaults).
func TestFirstProjectWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three binaries")
	}
	redisBin, err := redisserver.FindBinary()
	if err != nil {
		t.Skip(err)
	}
	for _, tool := range []string{"bash", "curl", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	md, err := readme.Load()
	if err != nil {
		t.Fatal(err)
	}
	root, err := readme.Root()
	if err != nil {
		t.Fatal(err)
	}
	var script []string
	for _, b := range readme.Blocks(md) {
		if b.Section == "Your first real project in five minutes" && b.Lang == "sh" {
			script = append(script, b.Text)
		}
	}
	if len(script) < 5 {
		t.Fatalf("found %d sh blocks in the walkthrough, want at least 5", len(script))
	}

	// Then the operator's way into the admin listener, which the
	// walkthrough's config (no status.token) leaves to the token serve
	// created beside the config: refused without it, answered with it as
	// agentsmithctl prints it.
	script = append(script, `test "$(stat -c %a agentsmithd.status-token)" = 600
test "$(curl -s -o /dev/null -w '%{http_code}' "http://$ADMIN/status.json")" = 401
curl -fsS -H "Authorization: Bearer $(agentsmithctl -c agentsmithd.yaml status-token)" "http://$ADMIN/status.json" > /dev/null
echo "admin listener: token ok"`)

	// As root, each run's uid must pass every directory above $FIRST.
	first := reachableDir(t)
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euc", strings.Join(script, "\n"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		// REDIS is left to the walkthrough, which must pick its own.
		"FIRST="+first, "SIM="+freeAddr(t), "REDIS=", "LISTEN="+freeAddr(t), "ADMIN="+freeAddr(t),
		"TMPDIR="+tmp,
		"PATH="+filepath.Dir(redisBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	// Its own process group, so trackersim, redis-server and the daemon it
	// starts in the background go with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A file, not a pipe: the background processes keep their copy of
	// stdout open after bash exits, and Wait would wait for them.
	outFile, err := os.Create(filepath.Join(tmp, "walkthrough.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	cmd.Stdout, cmd.Stderr = outFile, outFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err = cmd.Wait()
	// Asked while the walkthrough's Redis still runs (below the kill).
	var redisAddr, redisDir string
	if err == nil {
		redisAddr, redisDir = walkthroughRedis(t, first)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	out, _ := os.ReadFile(outFile.Name())
	if err != nil {
		daemonLog, _ := os.ReadFile(filepath.Join(first, "agentsmithd.log"))
		t.Fatalf("walkthrough failed: %v\n%s\ndaemon log:\n%s", err, out, daemonLog)
	}
	// The daemon's Redis is the one the walkthrough started in $FIRST, not
	// a developer's Redis on the usual port (one runs there on CI hosts).
	if _, port, _ := net.SplitHostPort(redisAddr); port == "6379" || port == "" {
		t.Errorf("the walkthrough's config points redis at %q", redisAddr)
	}
	if redisDir != first {
		t.Errorf("the Redis at %s keeps its data in %q, not in the walkthrough's %s", redisAddr, redisDir, first)
	}
	s := string(out)
	for _, want := range []string{"agentsmithd.yaml: ok", "pending → enqueued", "in-progress → done",
		"working on demo/app#1: Say hello (attempt 1)\nsaved the ticket in ", "admin listener: token ok"} {
		if !strings.Contains(s, want) {
			t.Errorf("walkthrough output lacks %q:\n%s", want, s)
		}
	}
	// The pipeline ran in the ticket's work dir and read the ticket.
	matches, _ := filepath.Glob(filepath.Join(first, "work", "first", "*", "ticket.json"))
	if len(matches) != 1 {
		t.Fatalf("ticket.json in the work dir: %q", matches)
	}
	if b, _ := os.ReadFile(matches[0]); !strings.Contains(string(b), `"title":"Say hello"`) {
		t.Errorf("ticket.json = %s", b)
	}
}

// freeAddr is a loopback address with a port free at the time of asking.
func freeAddr(t *testing.T) string {
	t.Helper()
	port, err := redisserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// walkthroughRedis is the redis addr of the walkthrough's config in first
// and the data dir (CONFIG GET dir) of the Redis answering there.
func walkthroughRedis(t *testing.T, first string) (addr, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(first, "agentsmithd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^redis: \{addr: "([^"]*)"\}`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no redis addr in the walkthrough's config:\n%s", b)
	}
	addr = string(m[1])
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := rdb.ConfigGet(ctx, "dir").Result()
	if err != nil {
		t.Fatalf("CONFIG GET dir at %s: %v", addr, err)
	}
	return addr, got["dir"]
}
