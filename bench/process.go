package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/proctree"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// ProcessResult is what the daemon binary itself costs and how fast a fleet
// of real processes recovers, with the daemon's default settings.
type ProcessResult struct {
	IdleRSSMB        float64 `json:"idle_rss_mb"`
	Queued10kRSSMB   float64 `json:"queued_10k_rss_mb"`
	Running100RSSMB  float64 `json:"running_100_rss_mb"`
	Running100HWMMB  float64 `json:"running_100_peak_rss_mb"`
	Kill9RecoveryS   float64 `json:"kill9_recovery_s"`
	WipeRequeueS     float64 `json:"redis_wipe_requeue_s"`
	WipeEnqueued     int     `json:"redis_wipe_enqueued"`
	RecoveryDefaults string  `json:"recovery_settings"`
}

// daemonProc is one agentsmithd process the bench started.
type daemonProc struct {
	cmd  *exec.Cmd
	port int
	done chan struct{}
	log  *os.File
}

// procWorld is a trackersim served over HTTP and the built daemon binary.
type procWorld struct {
	dir, bin string
	redis    string
	sim      *trackersim.Sim
	simSrv   *httptest.Server
}

// buildDaemon builds cmd/agentsmithd from the main module (the bench's
// parent directory by its replace directive).
func buildDaemon(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/agentsmithd/agentsmithd").Output()
	if err != nil {
		return "", fmt.Errorf("locate the main module: %w", err)
	}
	bin := filepath.Join(dir, "agentsmithd")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/agentsmithd")
	cmd.Dir = strings.TrimSpace(string(out))
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build agentsmithd: %w\n%s", err, b)
	}
	return bin, nil
}

// config is a daemon config on the sim; extra holds top-level YAML (roles,
// timings) and pipeline the project's pipeline block. Empty extra means the
// daemon's defaults, which the recovery figures are about.
func (w *procWorld) config(inst, repo string, port int, extra, pipeline string) string {
	return fmt.Sprintf(`listen: 127.0.0.1:%d
admin_listen: 127.0.0.1:0
instance_id: %s
redis: {addr: %q}
%s
projects:
  - name: proc
    platform: github
    base_url: %s/github/
    repo: %s
    token: {env: BENCH_TOKEN}
    webhook: {secret_env: BENCH_SECRET}
    pipeline:
%s
`, port, inst, w.redis, extra, w.simSrv.URL, repo, pipeline)
}

// start runs one daemon serving repo (each measurement has its own
// repository, so its webhooks reach only its daemons).
func (w *procWorld) start(ctx context.Context, inst, repo, extra, pipeline string) (*daemonProc, error) {
	w.sim.CreateRepo(repo)
	port, err := freeTCPPort()
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(w.dir, inst+".yaml")
	if err := os.WriteFile(cfg, []byte(w.config(inst, repo, port, extra, pipeline)), 0o600); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(w.dir, inst+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(w.bin, "serve", "-c", cfg)
	cmd.Env = append(os.Environ(), "BENCH_TOKEN=t", "BENCH_SECRET="+webhookSecret)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", inst, err)
	}
	d := &daemonProc{cmd: cmd, port: port, done: make(chan struct{}), log: logf}
	go func() { _ = cmd.Wait(); logf.Close(); close(d.done) }()
	if err := waitFor(ctx, 30*time.Second, func() bool { return ready(port) }); err != nil {
		d.kill()
		return nil, fmt.Errorf("%s not ready: %w", inst, err)
	}
	return d, nil
}

func (d *daemonProc) url() string { return fmt.Sprintf("http://127.0.0.1:%d", d.port) }

// stop ends the daemon gracefully (SIGTERM) and waits.
func (d *daemonProc) stop() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		d.kill()
	}
}

// kill is kill -9 of the daemon and of its pipelines' process groups.
func (d *daemonProc) kill() {
	pid := d.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	for _, pg := range proctree.ChildGroups(pid) {
		_ = syscall.Kill(-pg, syscall.SIGKILL)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	<-d.done
}

// rss reads the daemon's resident set size and its peak from /proc.
func (d *daemonProc) rss() (cur, peak float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			cur = kb / 1024
		case "VmHWM:":
			peak = kb / 1024
		}
	}
	return cur, peak, nil
}

func ready(port int) bool {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// waitFor polls cond until it holds or within passes.
func waitFor(ctx context.Context, within time.Duration, cond func() bool) error {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("condition not met within %s", within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

func freeTCPPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// processes measures the daemon binary: RSS idle, with 10k Enqueued tickets
// (queued in Redis and listed by housekeeping), with 100 running pipelines;
// and recovery with default settings after kill -9 of a consumer and after
// Redis loses its data.
func (b *bench) processes(ctx context.Context) error {
	fmt.Println("## 7. The daemon process: memory (RSS) and recovery with default settings")
	fmt.Println()
	dir, err := os.MkdirTemp("", "agentsmithd-bench-proc-")
	if err != nil {
		return err
	}
	if os.Getenv("BENCH_KEEP") == "" {
		defer os.RemoveAll(dir)
	} else {
		fmt.Printf("(keeping %s)\n", dir)
	}
	bin, err := buildDaemon(ctx, dir)
	if err != nil {
		return err
	}
	r := &ProcessResult{RecoveryDefaults: "instance_ttl 15s, lease_ttl 15s, fast_interval 5s, slow_interval 60s, heartbeat 2m/30s, enqueued_grace 30s"}
	b.res.Process = r
	steps := []func(context.Context, *procWorld, *ProcessResult) error{b.rssIdleAndQueued, b.rssRunning, b.kill9Recovery, b.wipeRecovery}
	for _, st := range steps {
		if err := b.flush(ctx); err != nil {
			return err
		}
		// A fresh sim per measurement: the 10k tickets of one must not
		// slow the sim down for the next.
		s := trackersim.New(trackersim.Options{RateLimit: 1 << 30, PerPage: 100})
		srv := httptest.NewServer(s.Handler())
		err := st(ctx, &procWorld{dir: dir, bin: bin, redis: b.addr, sim: s, simSrv: srv}, r)
		srv.Close()
		s.Close()
		if err != nil {
			return err
		}
	}
	fmt.Println("| figure | value |")
	fmt.Println("|---|---:|")
	fmt.Printf("| RSS idle (all roles, one project) | %.1f MiB |\n", r.IdleRSSMB)
	fmt.Printf("| RSS with 10k Enqueued tickets queued (housekeeping listing them) | %.1f MiB |\n", r.Queued10kRSSMB)
	fmt.Printf("| RSS with 100 running pipelines (peak) | %.1f MiB (%.1f MiB) |\n", r.Running100RSSMB, r.Running100HWMMB)
	fmt.Printf("| kill -9 of a consumer → its ticket running again on the other replica | %.2f s |\n", r.Kill9RecoveryS)
	fmt.Printf("| Redis data lost (FLUSHALL) → all %d Enqueued tickets queued again | %.2f s |\n", r.WipeEnqueued, r.WipeRequeueS)
	fmt.Println()
	fmt.Printf("Recovery uses the daemon's defaults (%s); RSS is VmRSS of the agentsmithd process from /proc.\n\n", r.RecoveryDefaults)
	return nil
}

func (b *bench) rssIdleAndQueued(ctx context.Context, w *procWorld, r *ProcessResult) error {
	d, err := w.start(ctx, "mem-idle", "acme/idle", "", "      command: [\"true\"]")
	if err != nil {
		return err
	}
	time.Sleep(2 * time.Second) // let the roles settle into their steady loops
	r.IdleRSSMB, _, err = d.rss()
	d.stop()
	if err != nil {
		return err
	}
	w.sim.CreateRepo("acme/queued")
	// 10k Enqueued tickets with their queue entries; no consumer role, so
	// they stay queued while housekeeping lists them every second.
	for i := range 10000 {
		n := w.sim.CreateIssue("acme/queued", fmt.Sprintf("queued %d", i), "", trigger, "agent-smith:enqueued")
		req := lifecycle.PipelineRequest{ID: fmt.Sprintf("q-%d", n), Ref: ref("proc", "acme/queued", n), Source: lifecycle.SourceWebhook,
			Attempt: 1, EnqueuedAt: time.Now()}
		if err := b.rdb.RPush(ctx, keys.Queue(), req.Encode()).Err(); err != nil {
			return err
		}
	}
	d, err = w.start(ctx, "mem-queued", "acme/queued", "roles: [receiver, poller, housekeeping]\nhousekeeping: {slow_interval: 1s}",
		"      command: [\"true\"]")
	if err != nil {
		return err
	}
	defer d.stop()
	lists := func() int { return w.sim.Stats().Calls["GET /repos/{owner}/{repo}/issues"] }
	before := lists()
	// Listing 10k Enqueued tickets twice (100 per page).
	if err := waitFor(ctx, 60*time.Second, func() bool { return lists()-before >= 200 }); err != nil {
		return fmt.Errorf("housekeeping did not list the tickets: %w", err)
	}
	r.Queued10kRSSMB, _, err = d.rss()
	return err
}

func (b *bench) rssRunning(ctx context.Context, w *procWorld, r *ProcessResult) error {
	d, err := w.start(ctx, "mem-running", "acme/running", "consumer: {concurrency: 100, shutdown_grace: 1s, kill_grace: 1s}",
		"      command: [\"sleep\", \"120\"]\n      timeout: 10m")
	if err != nil {
		return err
	}
	defer d.stop()
	w.sim.AddHook(trackersim.Hook{Repo: "acme/running", URL: d.url() + "/webhooks/github", Secret: webhookSecret})
	for i := range 100 {
		w.sim.CreateIssue("acme/running", fmt.Sprintf("run %d", i), "", trigger)
	}
	if err := waitFor(ctx, 5*time.Minute, func() bool { n, _ := runstate.Count(ctx, b.rdb).Result(); return n >= 100 }); err != nil {
		return fmt.Errorf("100 runs did not start: %w", err)
	}
	r.Running100RSSMB, r.Running100HWMMB, err = d.rss()
	return err
}

// kill9Recovery: replicas A and B with default settings; A runs a ticket
// and is killed with its pipeline; the figure is the time until B runs it.
func (b *bench) kill9Recovery(ctx context.Context, w *procWorld, r *ProcessResult) error {
	runLog := filepath.Join(w.dir, "kill9.runs")
	pipeline := fmt.Sprintf("      command: [\"sh\", \"-c\", \"echo $AGENTSMITH_ATTEMPT >> %s; sleep 600\"]\n      timeout: 20m", runLog)
	a, err := w.start(ctx, "replica-a", "acme/kill9", "", pipeline)
	if err != nil {
		return err
	}
	defer a.kill()
	bb, err := w.start(ctx, "replica-b", "acme/kill9", "", pipeline)
	if err != nil {
		return err
	}
	defer bb.stop()
	runs := func() int { b, _ := os.ReadFile(runLog); return strings.Count(string(b), "\n") }
	// A receives the webhook; either replica's consumer may take the
	// request, and the one that runs it is the victim.
	w.sim.AddHook(trackersim.Hook{Repo: "acme/kill9", URL: a.url() + "/webhooks/github", Secret: webhookSecret})
	n := w.sim.CreateIssue("acme/kill9", "kill me", "", trigger)
	id := github.FormatID("acme/kill9", n)
	owner := func() string {
		rec, _ := runstate.Runs(ctx, b.rdb)
		for k, v := range rec {
			if strings.HasSuffix(k, id) {
				return v.Instance
			}
		}
		return ""
	}
	if err := waitFor(ctx, 30*time.Second, func() bool { return owner() != "" && runs() == 1 }); err != nil {
		return fmt.Errorf("first run did not start: %w", err)
	}
	victim, survivor := a, bb
	if owner() == "replica-b" {
		victim, survivor = bb, a
	}
	killed := time.Now()
	victim.kill()
	if err := waitFor(ctx, 5*time.Minute, func() bool { return runs() >= 2 }); err != nil {
		return fmt.Errorf("ticket not re-run after kill -9: %w", err)
	}
	r.Kill9RecoveryS = time.Since(killed).Seconds()
	for _, pg := range proctree.ChildGroups(survivor.cmd.Process.Pid) {
		_ = syscall.Kill(-pg, syscall.SIGKILL)
	}
	return nil
}

// wipeRecovery: one replica with default settings, one consumer slot held
// by a long run so five more tickets stay Enqueued; Redis loses its data;
// the figure is the time until all five are queued again.
func (b *bench) wipeRecovery(ctx context.Context, w *procWorld, r *ProcessResult) error {
	d, err := w.start(ctx, "wipe", "acme/wipe", "consumer: {concurrency: 1}", "      command: [\"sleep\", \"600\"]\n      timeout: 20m")
	if err != nil {
		return err
	}
	defer d.kill()
	w.sim.AddHook(trackersim.Hook{Repo: "acme/wipe", URL: d.url() + "/webhooks/github", Secret: webhookSecret})
	w.sim.CreateIssue("acme/wipe", "blocker", "", trigger)
	if err := waitFor(ctx, 30*time.Second, func() bool { n, _ := runstate.Count(ctx, b.rdb).Result(); return n == 1 }); err != nil {
		return err
	}
	var ids []string
	for i := range 5 {
		n := w.sim.CreateIssue("acme/wipe", fmt.Sprintf("enqueued %d", i), "", trigger)
		ids = append(ids, github.FormatID("acme/wipe", n))
	}
	queued := func() int {
		vs, _ := b.rdb.LRange(ctx, keys.Queue(), 0, -1).Result()
		all := strings.Join(vs, "\n")
		c := 0
		for _, id := range ids {
			if strings.Contains(all, `"id":"`+id+`"`) {
				c++
			}
		}
		return c
	}
	if err := waitFor(ctx, 30*time.Second, func() bool { return queued() == len(ids) }); err != nil {
		return fmt.Errorf("tickets not queued before the wipe: %w", err)
	}
	wiped := time.Now()
	if err := b.rdb.FlushAll(ctx).Err(); err != nil {
		return err
	}
	if err := waitFor(ctx, 3*time.Minute, func() bool { return queued() == len(ids) }); err != nil {
		return fmt.Errorf("tickets in Enqueued not queued again after the wipe: %w", err)
	}
	r.WipeRequeueS = time.Since(wiped).Seconds()
	r.WipeEnqueued = len(ids)
	return nil
}
