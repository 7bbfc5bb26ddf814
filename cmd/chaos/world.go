package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/agentsmithd/agentsmithd/cmd/chaos/internal/netproxy"
	"github.com/agentsmithd/agentsmithd/internal/simcases"
	"github.com/agentsmithd/agentsmithd/pkg/redisserver"
	"github.com/agentsmithd/agentsmithd/pkg/sandbox"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// project is one tracker project the fleet serves: a platform of the shared
// table (internal/simcases) and how tickets reach it.
type project struct {
	simcases.Case
	name             string
	webhook, polling bool
	// stages are the project's pipeline.stages in order; nil for a project
	// without stages (stages.go). gates are those of them with an approval
	// gate (approver.go).
	stages, gates []string
}

// baseProjects are the projects of every run: one per platform, without
// stages.
var baseProjects = []project{
	{Case: simcases.GitHub, name: "gh", webhook: true, polling: true},
	{Case: simcases.GitLab, name: "gl", webhook: true},
	{Case: simcases.AzureDevOps, name: "ado", webhook: true},
	{Case: simcases.Jira, name: "jira", polling: true},
}

// projects are the run's projects: baseProjects, and with -stages their
// staged twins (useStages). A chaos process does one run at a time.
var projects = baseProjects

// pipelineScript is every project's pipeline. It logs start, a tick every
// ~100 ms, term (SIGTERM seen) and end (exit 0) or fail (exit 1) to
// RUN_LOG with the replica incarnation that runs it
// ($AGENTSMITH_INSTANCE, the incarnation's instance_id) and its run key
// (runKey: the random tail of $AGENTSMITH_RUN_TOKEN, unique per run), its
// stage ($AGENTSMITH_STAGE, "-" without stages) and the stage whose result
// it was handed ($AGENTSMITH_PREVIOUS_RESULT, "-" for none), so the run
// log tells runs, replicas, stages and overlaps apart without trusting
// the daemon. Not pids: each run has a sandbox of its own, in which $$ is
// its PID namespace's (alike across runs) and the daemon is not visible.
// A stage that succeeds writes its result, naming itself, for the next.
// Titles choose the behaviour:
// "hang" runs past the timeout, "stubborn" also ignores SIGTERM, "fail"
// exits 1 ("fail@implement." only in stage implement), "slow" runs 3.5 s (past the shutdown grace, within the timeout),
// "frozen" runs 6 s on its first attempt (past the heartbeat TTL: see
// frozen.go) and 0.5 s after, "medium" 2 s and "brief" 1 s (the
// partitions': running when the cut comes, brief ones ending within it
// even on a loaded machine, where a tick takes longer).
const pipelineScript = `I=${AGENTSMITH_INSTANCE:--}
K=${AGENTSMITH_RUN_TOKEN##*|}
K=${K:0:12}
S=${AGENTSMITH_STAGE:--}
P=-
case "$AGENTSMITH_PREVIOUS_RESULT" in *"chaos stage "*) P=${AGENTSMITH_PREVIOUS_RESULT#*chaos stage }; P=${P%%[!a-z0-9-]*};; esac
L() { printf '%s %s %s %s %s %s %s %s\n' "$1" "$AGENTSMITH_TICKET_ID" "$AGENTSMITH_ATTEMPT" "$I" "${K:--}" "$EPOCHREALTIME" "$S" "${P:--}" >> "$RUN_LOG"; }
L start
case "$AGENTSMITH_TITLE" in
  *frozen*) trap 'L term; exit 143' TERM; n=$(( AGENTSMITH_ATTEMPT > 1 ? 5 : 60 ));;
  *stubborn*) trap 'L term' TERM; n=100000;;
  *hang*) trap 'L term; exit 143' TERM; n=100000;;
  *slow*) trap 'L term; exit 143' TERM; n=35;;
  *medium*) trap 'L term; exit 143' TERM; n=20;;
  *brief*) trap 'L term; exit 143' TERM; n=10;;
  *) trap 'L term; exit 143' TERM; n=$((3 + RANDOM % 10));;
esac
i=0
while [ "$i" -lt "$n" ]; do sleep 0.1; L tick; i=$((i+1)); done
case "$AGENTSMITH_TITLE" in
  *"fail@$S."*) L fail; exit 1;;
  *fail@*) ;;
  *fail*) L fail; exit 1;;
esac
if [ "$S" != - ]; then printf '{"summary": "chaos stage %s of %s"}' "$S" "$AGENTSMITH_TICKET_ID" > "$AGENTSMITH_RESULT_FILE"; fi
L end
`

const (
	maxAttempts = 3
	chaosSecret = "chaos-webhook-secret"
	chaosToken  = "chaos-api-token"
	// heartbeatTTL and heartbeatRenew are the replicas' run heartbeat
	// (timingsYAML); the split-brain partition measures against them.
	heartbeatTTL   = 3 * time.Second
	heartbeatRenew = 500 * time.Millisecond
	// instanceTTL is the replicas' liveness key's TTL (housekeeping's
	// instance_ttl in timingsYAML), renewed every quarter of it (pkg/presence).
	instanceTTL = 2 * time.Second
	// claimLockTTL is the replicas' claim_lock_ttl (timingsYAML): a claim's
	// writes are fenced by its lock's trust window, not by liveness.
	claimLockTTL = 5 * time.Second
	// chaosGuardCheck is the replicas' consumer.guard_check (timingsYAML):
	// how often a run guard reads its run's token (thawBound).
	chaosGuardCheck = 100 * time.Millisecond
	timingsYAML     = "consumer: {concurrency: 4, heartbeat_ttl: 3s, heartbeat_renew: 500ms, shutdown_grace: 2s, kill_grace: 1s, guard_check: 100ms}\nhousekeeping: {fast_interval: 200ms, slow_interval: 1s, instance_ttl: 2s, lease_ttl: 2s, enqueued_grace: 2s}\npoller: {lease_ttl: 2s}\nclaim_lock_ttl: 5s\n"
	pipelineTime    = 5 * time.Second
)

// event is one fault the chaos loop caused, for the analysis.
type event struct {
	At   time.Time
	Kind string // start, kill, stop, cont, redis-down, redis-up
	Inc  string // replica incarnation ("r1.3"), "" for redis
	PID  int
}

// world is everything the chaos run owns.
type world struct {
	dir     string
	bin     string
	sim     *trackersim.Sim
	simURL  string
	simSrv  *http.Server
	lbURL   string
	lbSrv   *http.Server
	redis   *redisserver.Process
	cluster *clusterRedis // -cluster: instead of redis
	simLog  *os.File      // trackersim.log: the sim's own log
	runLog  string
	logw    io.Writer
	verbose bool
	skew    time.Duration // replica clocks ahead and behind (skewEnv)

	mu       sync.Mutex
	replicas []*replica
	events   []event
	rr       int
	// pin, when set, is the one replica the load balancer routes to, and
	// answers records the status of every delivery it answered meanwhile.
	pin     *replica
	answers []answer
	// lateWrites are label writes a replica cut from Redis made after its
	// trust window (splitBrain): stale writes.
	lateWrites []string
	// freezes are the replicas frozen with their pipelines (freeze, thaw).
	freezes []freezeSpan
	// stageKills are stageWindowKills' kills.
	stageKills []stageKill
	// decisionTaken, when set, gets the next replica that answers a
	// decision's delivery (approvalKills); approvalKills counts its kills.
	decisionTaken chan *replica
	approvalKills int
	// approver decides the parked tickets, with -gates (nil without).
	approver *approver
}

func (w *world) logf(format string, args ...any) {
	if w.verbose {
		fmt.Fprintf(w.logw, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
	}
}

func (w *world) record(kind, inc string, pid int) {
	w.mu.Lock()
	w.events = append(w.events, event{At: time.Now(), Kind: kind, Inc: inc, PID: pid})
	w.mu.Unlock()
	w.logf("%s %s %d", kind, inc, pid)
}

// answer is a delivery's status as the load balancer passed it on.
type answer struct {
	code int
	at   time.Time
	body []byte // the delivery, to tell the scenario's from others
}

// replica is one of the three slots; each (re)start is a new incarnation
// with its own instance_id, so the sim's write log names the incarnation.
type replica struct {
	slot, gen int
	port      int
	inc       string
	cmd       *exec.Cmd
	done      chan struct{}
	stopped   bool
	alive     bool
	// redisNet and trackerNet sit between the slot (every incarnation)
	// and Redis and the tracker: the network the partitions cut.
	redisNet, trackerNet *netproxy.Proxy
}

func serve(h http.Handler) (*http.Server, string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return srv, "http://" + l.Addr().String(), nil
}

// buildDaemon compiles agentsmithd from this module.
func buildDaemon(dir string) (string, error) {
	bin := filepath.Join(dir, "agentsmithd")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/agentsmithd/agentsmithd/cmd/agentsmithd").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build agentsmithd: %w\n%s", err, out)
	}
	return bin, nil
}

func newWorld(ctx context.Context, dir string, logw io.Writer, verbose bool, spec redisserver.Spec, skew time.Duration, cluster bool) (*world, error) {
	w := &world{dir: dir, runLog: filepath.Join(dir, sharedDir, "runs.log"), logw: logw, verbose: verbose, skew: skew}
	if err := w.sandboxDirs(); err != nil {
		return nil, err
	}
	bin, err := buildDaemon(dir)
	if err != nil {
		return nil, err
	}
	w.bin = bin
	rbin, err := redisserver.FindBinary()
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	if cluster {
		if w.cluster, err = startCluster(ctx, rbin, dir); err != nil {
			return w, err
		}
	} else {
		// redis.log: what the server said across its restarts, kept with
		// the replica logs for a failed run.
		spec.Args = append(slices.Clone(spec.Args), "--logfile", filepath.Join(dir, "redis.log"))
		if w.redis, err = redisserver.StartSpec(ctx, rbin, dir, spec); err != nil {
			return nil, fmt.Errorf("chaos: %w (see %s)", err, filepath.Join(dir, "redis.log"))
		}
	}
	if w.simLog, err = os.Create(filepath.Join(dir, "trackersim.log")); err != nil {
		return w, fmt.Errorf("chaos: %w", err)
	}
	w.sim = trackersim.New(trackersim.Options{Logger: fileLogger(w.simLog)})
	if w.simSrv, w.simURL, err = serve(w.sim.Handler()); err != nil {
		return nil, err
	}
	if w.lbSrv, w.lbURL, err = serve(http.HandlerFunc(w.forward)); err != nil {
		return nil, err
	}
	for _, p := range projects {
		w.sim.CreateRepo(p.Repo)
		if p.webhook {
			w.sim.AddHook(p.Hook(w.lbURL, chaosSecret))
		}
	}
	for slot := 1; slot <= 3; slot++ {
		port, err := redisserver.FreePort()
		if err != nil {
			return nil, err
		}
		r := &replica{slot: slot, port: port}
		// The Redis proxy fronts the one standalone server; a cluster's
		// clients follow MOVED redirects to the nodes' own addresses, so in
		// cluster mode the proxy is idle and the partitions are off.
		redisAddr := ""
		if w.redis != nil {
			redisAddr = w.redis.Addr()
		} else {
			redisAddr = w.cluster.addrs()[0]
		}
		if r.redisNet, err = netproxy.New(redisAddr); err != nil {
			return nil, fmt.Errorf("chaos: %w", err)
		}
		if r.trackerNet, err = netproxy.New(strings.TrimPrefix(w.simURL, "http://")); err != nil {
			r.redisNet.Close()
			return nil, fmt.Errorf("chaos: %w", err)
		}
		// forward reads the list under w.mu, and the sim's ping to the
		// load balancer can arrive while replicas are still being added.
		w.mu.Lock()
		w.replicas = append(w.replicas, r)
		w.mu.Unlock()
		if err := w.startReplica(r); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// sharedDir is the directory of the world's dir every run sees, writable:
// it holds the run log. The rest of the world's dir (configs, replica
// logs, the state dirs) is not mounted into the runs.
const sharedDir = "shared"

// sandboxDirs makes the world's dir what the replicas' sandboxes need.
// Every run has a sandbox of its own, as a uid of its own when the
// replicas are root (leased per run, no one's), and sees
// only the system dirs, its work dir and the config's sandbox.mounts, at
// their own paths: so the world's dir lets others pass (o+x), the shared
// dir (mounted writable) and the run log in it are writable by anyone,
// and each slot's state dir (STATE_DIRECTORY, its work root below) lets
// others pass. A root daemon refuses to start when its runs cannot pass
// a directory above them, so one above the world's dir that does not
// is named here.
func (w *world) sandboxDirs() error {
	if blocked := sandbox.Unreachable(filepath.Dir(w.dir)); blocked != "" && os.Geteuid() == 0 {
		return fmt.Errorf("chaos: %s: %s does not let others pass, and each replica runs its pipelines in sandboxes of their own uids, which must reach the dir (chmod o+x it, or choose another dir)", w.dir, blocked)
	}
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{w.dir, 0o711}, {filepath.Join(w.dir, sharedDir), 0o777}, {filepath.Join(w.dir, "state"), 0o711}} {
		if err := os.MkdirAll(d.path, d.mode); err != nil {
			return fmt.Errorf("chaos: %w", err)
		}
		if err := os.Chmod(d.path, d.mode); err != nil { // past the umask
			return fmt.Errorf("chaos: %w", err)
		}
	}
	if err := os.WriteFile(w.runLog, nil, 0o666); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	if err := os.Chmod(w.runLog, 0o666); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	return nil
}

// stateDir is slot's STATE_DIRECTORY, kept across its incarnations as a
// pod's volume is: its work root (work/ below it, which the daemon
// creates, 0711) holds the tickets' work dirs, kept between attempts on
// the same replica.
func (w *world) stateDir(slot int) string {
	return filepath.Join(w.dir, "state", fmt.Sprintf("r%d", slot))
}

func (w *world) config(r *replica) string {
	var b strings.Builder
	// trackersim_writer_header: the sim's write log names the incarnation
	// of every write, which the stale-write analysis needs.
	// admin_listen is port 0: a port fixed across restarts can be taken,
	// while the replica is down, as another connection's ephemeral port
	// (a default run failed so: "bind: address already in use"); the soak
	// reads each incarnation's bound address from its log (adminAddr).
	// sandbox: every run in a sandbox of its own (the default), which sees
	// the shared dir to append to the run log.
	fmt.Fprintf(&b, "listen: 127.0.0.1:%d\nadmin_listen: 127.0.0.1:0\ninstance_id: %s\ntrackersim_writer_header: true\nredis: %s\n%ssandbox: {mounts: [{path: %q, writable: true}]}\nprojects:\n",
		r.port, r.inc, w.replicaRedisYAML(r), timingsYAML, filepath.Join(w.dir, sharedDir))
	for _, p := range projects {
		fmt.Fprintf(&b, "  - name: %s\n    %s\n", p.name, p.Project("http://"+r.trackerNet.Addr(), "CHAOS_TOKEN", "    "))
		if p.webhook {
			b.WriteString("    webhook: {secret_env: CHAOS_SECRET}\n")
		}
		if p.polling {
			b.WriteString("    polling: {enabled: true, interval: 1s}\n")
		}
		fmt.Fprintf(&b, "    pipeline:\n      command: [\"bash\", \"-c\", %q]\n      env: {RUN_LOG: %q}\n      timeout: %s\n      max_attempts: %d\n",
			pipelineScript, w.runLog, pipelineTime, maxAttempts)
		if len(p.stages) > 0 {
			b.WriteString("      stages:\n")
			for _, st := range p.stages {
				fmt.Fprintf(&b, "        - name: %s\n", st)
				if slices.Contains(p.gates, st) {
					b.WriteString("          gate: approval\n")
				}
			}
		}
	}
	return b.String()
}

// startReplica starts a new incarnation of slot r on its fixed port.
func (w *world) startReplica(r *replica) error {
	// Under w.mu: the soak's sampler reads inc while a replica restarts.
	w.mu.Lock()
	r.gen++
	r.inc = fmt.Sprintf("r%d.%d", r.slot, r.gen)
	w.mu.Unlock()
	// The slot's port, kept across restarts, can be taken while the
	// replica is down as another connection's ephemeral port: move the
	// slot to a free one rather than fail to bind.
	if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", r.port)); err == nil {
		ln.Close()
	} else {
		port, err := redisserver.FreePort()
		if err != nil {
			return err
		}
		w.mu.Lock()
		r.port = port
		w.mu.Unlock()
	}
	cfg := filepath.Join(w.dir, r.inc+".yaml")
	if err := os.WriteFile(cfg, []byte(w.config(r)), 0o600); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	logf, err := os.Create(filepath.Join(w.dir, r.inc+".log"))
	if err != nil {
		return fmt.Errorf("create log: %w", err)
	}
	state := w.stateDir(r.slot)
	if err := os.MkdirAll(state, 0o711); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	if err := os.Chmod(state, 0o711); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	cmd := exec.Command(w.bin, "serve", "-c", cfg)
	cmd.Env = append(os.Environ(), "CHAOS_TOKEN="+chaosToken, "CHAOS_SECRET="+chaosSecret, "STATE_DIRECTORY="+state)
	cmd.Env = append(cmd.Env, skewEnv(r.slot, w.skew)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", r.inc, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	w.mu.Lock()
	r.cmd, r.done, r.alive, r.stopped = cmd, done, true, false
	w.mu.Unlock()
	w.record("start", r.inc, cmd.Process.Pid)
	return nil
}

// killPod kill -9s a replica the way a node or container dies: the daemon
// and its pipelines together. It freezes the daemon first so no pipeline is
// started between finding its children and killing them. False: r was
// not running (another killer got it first), so it is not the caller's to
// restart.
func (w *world) killPod(r *replica) bool {
	w.mu.Lock()
	cmd, alive := r.cmd, r.alive
	r.alive = false
	w.mu.Unlock()
	if !alive {
		return false
	}
	pid := cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	signalTree(pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	w.record("kill", r.inc, pid)
	<-r.done
	return true
}

// freeze SIGSTOPs a replica and its pipelines (a paused VM or cgroup freeze):
// the daemon, then everything below it (its run guards, their sandboxes'
// inits and the pipelines in them). The span it returns names what it
// stopped and the runs it held; thaw records it.
func (w *world) freeze(r *replica) freezeSpan {
	pid := r.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	groups, procs := signalTree(pid, syscall.SIGSTOP)
	// Round(0): the wall clock alone, which the run log's bash writes.
	f := freezeSpan{pid: pid, groups: groups, procs: procs, keys: map[string]bool{}, from: time.Now().Round(0)}
	for key := range runProcs(pid, false) {
		f.keys[key] = true
	}
	w.mu.Lock()
	r.stopped = true
	f.inc = r.inc
	w.mu.Unlock()
	w.record("stop", f.inc, pid)
	return f
}

// thaw SIGCONTs what freeze stopped and records the freeze for the
// analysis (workedDuring).
func (w *world) thaw(r *replica, f freezeSpan) {
	f.until = time.Now().Round(0)
	_ = syscall.Kill(f.pid, syscall.SIGCONT)
	for _, pg := range f.groups {
		_ = syscall.Kill(-pg, syscall.SIGCONT)
	}
	for _, p := range f.procs {
		_ = syscall.Kill(p, syscall.SIGCONT)
	}
	w.mu.Lock()
	r.stopped = false
	w.freezes = append(w.freezes, f)
	w.mu.Unlock()
	w.record("cont", f.inc, f.pid)
}

// forward is the load balancer in front of the receivers: it tries the
// live replicas in turn, as a Kubernetes Service would, and answers 503
// when none took the delivery (the tracker's redelivery problem then).
func (w *world) forward(rw http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 4<<20))
	if err != nil {
		http.Error(rw, "read body", http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	var ports []int
	byPort := map[int]*replica{}
	for i := range w.replicas {
		r := w.replicas[(w.rr+i)%len(w.replicas)]
		if r.alive && !r.stopped && (w.pin == nil || w.pin == r) {
			ports = append(ports, r.port)
			byPort[r.port] = r
		}
	}
	w.rr++
	pinned := w.pin != nil
	w.mu.Unlock()
	for _, port := range ports {
		ctx, cancel := context.WithTimeout(req.Context(), 8*time.Second)
		out, _ := http.NewRequestWithContext(ctx, req.Method, fmt.Sprintf("http://127.0.0.1:%d%s", port, req.URL.RequestURI()), bytes.NewReader(body))
		out.Header = req.Header.Clone()
		resp, err := http.DefaultClient.Do(out)
		if err != nil {
			cancel()
			continue
		}
		for k, v := range resp.Header {
			rw.Header()[k] = v
		}
		rw.WriteHeader(resp.StatusCode)
		if pinned {
			w.mu.Lock()
			w.answers = append(w.answers, answer{code: resp.StatusCode, at: time.Now(), body: body})
			w.mu.Unlock()
		}
		_, _ = io.Copy(rw, resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode < 300 && isDecisionDelivery(body) {
			w.decisionAnswered(byPort[port])
		}
		return
	}
	http.Error(rw, "no replica answered", http.StatusServiceUnavailable)
}

// redisClient is a client of the run's Redis (a cluster client with
// -cluster), nil if there is none.
func (w *world) redisClient() redis.UniversalClient {
	switch {
	case w.redis != nil:
		return redis.NewClient(&redis.Options{Addr: w.redis.Addr()})
	case w.cluster != nil:
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: w.cluster.addrs()})
	}
	return nil
}

// fileLogger writes f a line per entry, at debug level and above.
func fileLogger(f *os.File) *zap.Logger {
	enc := zap.NewDevelopmentEncoderConfig()
	return zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(f), zapcore.DebugLevel))
}

// close stops everything the world started.
func (w *world) close() {
	w.mu.Lock()
	rs := append([]*replica(nil), w.replicas...)
	w.mu.Unlock()
	for _, r := range rs {
		if r.cmd == nil {
			continue
		}
		pid := r.cmd.Process.Pid
		_ = syscall.Kill(pid, syscall.SIGCONT)
		signalTree(pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		<-r.done
	}
	for _, r := range rs {
		for _, p := range []*netproxy.Proxy{r.redisNet, r.trackerNet} {
			if p != nil {
				p.Close()
			}
		}
	}
	if w.lbSrv != nil {
		_ = w.lbSrv.Close()
	}
	if w.sim != nil {
		w.sim.Close()
	}
	if w.simSrv != nil {
		_ = w.simSrv.Close()
	}
	if w.simLog != nil {
		_ = w.simLog.Close()
	}
	if w.redis != nil {
		_ = w.redis.Stop()
	}
	if w.cluster != nil {
		w.cluster.stop()
	}
}

// rollingFigures are the figures of one rolling restart.
type rollingFigures struct {
	restarts  int
	exitWorst time.Duration // SIGTERM → the process exited
}

// rollingRestart replaces every replica in turn the way a Deployment's
// rolling update does: the load balancer stops routing to it, SIGTERM, wait
// for the exit (the daemon lets running pipelines finish within its grace,
// hands the rest back and releases its leases), start the new incarnation,
// wait until it reports ready, then the next one.
func (w *world) rollingRestart(ctx context.Context) (rollingFigures, error) {
	var f rollingFigures
	w.mu.Lock()
	rs := append([]*replica(nil), w.replicas...)
	w.mu.Unlock()
	for _, r := range rs {
		w.mu.Lock()
		r.alive = false
		cmd, done := r.cmd, r.done
		w.mu.Unlock()
		pid := cmd.Process.Pid
		sent := time.Now()
		w.record("term", r.inc, pid)
		_ = syscall.Kill(pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			return f, fmt.Errorf("rolling restart: %s did not exit within 60 s of SIGTERM", r.inc)
		case <-ctx.Done():
			return f, ctx.Err()
		}
		f.exitWorst = max(f.exitWorst, time.Since(sent))
		if err := w.startReplica(r); err != nil {
			return f, err
		}
		if err := waitReady(ctx, r.port, 30*time.Second); err != nil {
			return f, fmt.Errorf("rolling restart: %s: %w", r.inc, err)
		}
		f.restarts++
	}
	return f, nil
}

// waitReady polls a replica's /readyz until it answers 200.
func waitReady(ctx context.Context, port int, within time.Duration) error {
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if !sleepCtx(ctx, 50*time.Millisecond) { // polling with a deadline
			return ctx.Err()
		}
	}
	return fmt.Errorf("not ready within %s", within)
}
