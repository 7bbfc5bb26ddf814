package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/cmd/agentsmithd/internal/daemon"
	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/redistest"
	"github.com/agentsmithd/agentsmithd/platforms/sim"
)

// demoPipeline succeeds unless the ticket's title asks it to fail; it reads
// the ticket from its environment like a real pipeline would.
const demoPipeline = `echo "agent working on $AGENTSMITH_TICKET_ID: $AGENTSMITH_TITLE (attempt $AGENTSMITH_ATTEMPT)"
sleep 1
case "$AGENTSMITH_TITLE" in
  *flaky*) echo "FAIL: TestCheckout (0.42s)" ; echo "expected 200, got 500" >&2 ; exit 3 ;;
esac
echo "opened a pull request"`

const demoConfig = `# The demo's config: the same format agentsmithd serve reads.
listen: 127.0.0.1:0
instance_id: demo-replica
redis: {addr: "%s"}
consumer: {concurrency: 2, work_dir: "%s"}
housekeeping: {fast_interval: 1s, slow_interval: 5s}
projects:
  - name: webshop
    platform: github
    base_url: %s
    repo: demo/webshop
    token: {env: DEMO_GITHUB_TOKEN}
    webhook: {secrets: [{env: DEMO_WEBHOOK_SECRET}]}
    pipeline: {command: ["sh", "-c", %q], timeout: 30s, max_attempts: 2}
  - name: docs
    platform: github
    base_url: %s
    repo: demo/docs
    token: {env: DEMO_GITHUB_TOKEN}
    polling: {enabled: true, interval: 2s}
    pipeline: {command: ["sh", "-c", %q], timeout: 30s}
`

func demo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keep := fs.Bool("keep", false, "keep serving after every ticket settled (Ctrl-C to stop)")
	verbose := fs.Bool("v", false, "print the daemon's logs")
	timeout := fs.Duration("timeout", 90*time.Second, "give up if tickets have not settled by then")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	say := func(format string, a ...any) { fmt.Fprintf(stdout, format+"\n", a...) }
	tmp, err := os.MkdirTemp("", "agentsmithd-demo-")
	if err != nil {
		say("demo: %v", err)
		return 1
	}
	defer os.RemoveAll(tmp)

	redisAddr, stopRedis, err := startDemoRedis(ctx, tmp, say)
	if err != nil {
		say("demo: start redis: %v", err)
		return 1
	}
	defer stopRedis()

	s := sim.New(sim.Options{})
	defer s.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		say("demo: listen: %v", err)
		return 1
	}
	simSrv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = simSrv.Serve(ln) }()
	defer simSrv.Close()
	simURL := "http://" + ln.Addr().String()

	secret := "demo-secret-" + fmt.Sprint(time.Now().UnixNano())
	env := map[string]string{"DEMO_GITHUB_TOKEN": "demo-token", "DEMO_WEBHOOK_SECRET": secret}
	yaml := fmt.Sprintf(demoConfig, redisAddr, filepath.Join(tmp, "work"), simURL+"/github/", demoPipeline, simURL+"/github/", demoPipeline)
	cfg, err := config.Parse([]byte(yaml), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		say("demo: config: %v", err)
		return 1
	}
	log := zap.NewNop()
	if *verbose {
		log = newLogger("console", stderr)
	}
	d, err := daemon.New(cfg, daemon.Options{Logger: log})
	if err != nil {
		say("demo: %v", err)
		return 1
	}
	dctx, stopDaemon := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(dctx) }()
	defer func() { stopDaemon(); <-done }()
	select {
	case <-d.Listening():
	case err := <-done:
		say("demo: daemon: %v", err)
		return 1
	}
	s.AddHook(sim.Hook{Repo: "demo/webshop", URL: "http://" + d.Addr() + "/webhooks/github", Secret: secret})

	say("")
	say("  tracker sandbox (watch the labels change): %s/", simURL)
	say("  webhook receiver:                         http://%s/webhooks/github", d.Addr())
	say("")
	type tk struct{ repo, title string }
	tickets := []tk{
		{"demo/webshop", "Fix login redirect loop"},
		{"demo/webshop", "Add dark mode toggle"},
		{"demo/webshop", "Checkout is flaky on Safari"},
		{"demo/docs", "Document the new API (found by polling)"},
	}
	s.CreateIssue("demo/webshop", "Refactor CSS (no trigger label: never touched)", "", "enhancement")
	type key struct {
		repo string
		n    int
	}
	var watch []key
	for _, t := range tickets {
		n := s.CreateIssue(t.repo, t.title, "Created by agentsmithd demo.", "good first issue")
		watch = append(watch, key{t.repo, n})
	}
	// A human adds the trigger label: GitHub sends issues/labeled.
	for _, k := range watch {
		if err := s.AddLabels(k.repo, k.n, "agent-smith"); err != nil {
			say("demo: label: %v", err)
			return 1
		}
	}
	say("%-8s  %-20s  %-12s → %-12s  %s", "time", "ticket", "from", "to", "writer")
	labels := lifecycle.Labels{Prefix: cfg.LabelPrefix}
	deadline := time.After(*timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	printed := 0
	for {
		writes := s.Writes()
		for _, w := range writes[printed:] {
			from, to := labels.StateOf(w.Before), labels.StateOf(w.After)
			if from == to && !(from == lifecycle.Pending && len(labels.Lifecycle(w.After)) > 0) {
				continue
			}
			say("%-8s  %-20s  %-12s → %-12s  %s", w.At.Format("15:04:05"), fmt.Sprintf("%s#%d", w.Repo, w.Number), from, to, w.Writer)
		}
		printed = len(writes)
		settled := 0
		for _, k := range watch {
			if is, ok := s.Issue(k.repo, k.n); ok && labels.StateOf(is.Labels).Terminal() {
				settled++
			}
		}
		if settled == len(watch) {
			break
		}
		select {
		case <-ctx.Done():
			return 130
		case <-deadline:
			say("demo: tickets did not settle within %s", *timeout)
			return 1
		case <-tick.C:
		}
	}
	say("")
	for _, k := range watch {
		is, _ := s.Issue(k.repo, k.n)
		say("  %s#%d  %-45q labels: %s", k.repo, k.n, is.Title, strings.Join(is.Labels, ", "))
		for _, c := range is.Comments {
			say("      comment: %s", strings.ReplaceAll(strings.TrimSpace(c.Body), "\n", "\n               "))
		}
	}
	say("")
	say("every ticket settled; other labels untouched.")
	if *keep {
		say("serving until Ctrl-C: %s/", simURL)
		<-ctx.Done()
	}
	return 0
}

// startDemoRedis starts a real redis-server on a free port when one is
// installed, else an embedded in-process Redis (single replica only).
func startDemoRedis(ctx context.Context, dir string, say func(string, ...any)) (string, func(), error) {
	if bin, err := exec.LookPath("redis-server"); err == nil {
		p, err := redistest.StartProcess(ctx, bin, dir)
		if err != nil {
			return "", nil, err
		}
		say("  redis: %s (redis-server on a free port)", p.Addr())
		return p.Addr(), func() { _ = p.Stop() }, nil
	}
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return "", nil, err
	}
	say("  ******************************************************************")
	say("  * redis-server not found: using an EMBEDDED in-process Redis.    *")
	say("  * Fine for this single-replica demo; nothing survives a restart, *")
	say("  * and replicas cannot share it. Install redis-server for real use.*")
	say("  ******************************************************************")
	return m.Addr(), m.Close, nil
}
