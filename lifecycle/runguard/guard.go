// Package runguard keeps a pipeline from outliving its run when the daemon
// that started it cannot act: frozen (SIGSTOP, a stalled VM), or gone
// (kill -9). The daemon starts each pipeline under a small guard process,
// `agentsmithd guard`, which is the leader of the pipeline's process group
// and the pipeline's parent. The guard checks the run's token in Redis on
// its own (runstate.Holder, once before the pipeline starts and every
// Order.Check after), never starts a run that is not its own, and SIGKILLs
// the whole group when the run is no longer its own, or when its heartbeat or the daemon's
// liveness key has gone unrenewed for as long as the daemon itself trusts
// it: a frozen daemon's pipeline dies before either key can expire (when
// the check interval is shorter than the keys' untrusted margins: 6 s of
// the liveness key's 15 s by default), so before a successor can start;
// in any case within one check interval of the takeover.
//
// The daemon side (Launcher.Wrap) rewrites a procrun.Spec so the guard runs
// instead of the pipeline; the guard side (Main) is the body of the guard
// process. The daemon hands the guard its orders (Redis address and
// credentials, the run's ticket and token, the pipeline's command) as JSON
// over an inherited pipe (fd 3), never on the command line or in the
// environment, and the guard closes that fd before it starts the pipeline:
// the pipeline's environment is exactly what it was without a guard. A
// guard that does not start the pipeline says why on a second pipe (fd 4,
// close-on-exec), which the daemon reads once the guard has exited.
//
// No process of the run outlives it, though a pipeline can leave its
// process group (setsid, a double fork): the guard is the subreaper of
// everything the pipeline starts (PR_SET_CHILD_SUBREAPER), so orphans are
// re-parented to it, and once the pipeline has exited, or when the guard
// kills the run, it SIGKILLs every process below it. When the daemon
// started the guard in a run cgroup (pkg/runcg), the guard's kill also
// kills that cgroup. The pipeline gets SIGKILL should the guard die
// (PR_SET_PDEATHSIG); what it started then is left to the daemon's
// cgroup kill, or to init where there is no cgroup.
package runguard

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/redisconn"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/pkg/runcg"
	"github.com/agentsmithd/agentsmithd/pkg/sandbox"
	"github.com/agentsmithd/agentsmithd/pkg/trust"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// DefaultCheck is how often a guard reads its run's token: the bound on how
// long a pipeline runs beside its successor when its daemon is frozen. One
// GET per running pipeline per interval, on the guard's own connection.
const DefaultCheck = 2 * time.Second

// maxOrder bounds what the guard reads from its orders pipe: above the
// most a sandbox's spec may carry (its files, argv and environment).
const maxOrder = 16 << 20

// Redis says how the guard reaches Redis: the daemon's own connection
// settings (redisconn.Options without the pool), secrets included, which is
// why they travel only over the orders pipe.
type Redis struct {
	Mode             string              `json:"mode,omitempty"`
	Addrs            []string            `json:"addrs"`
	MasterName       string              `json:"master_name,omitempty"`
	Username         string              `json:"username,omitempty"`
	Password         string              `json:"password,omitempty"`
	SentinelPassword string              `json:"sentinel_password,omitempty"`
	DB               int                 `json:"db,omitempty"`
	TLS              *redisconn.TLSFiles `json:"tls,omitempty"`
	// HashTag is pkg/keys' cluster prefix mode, so the guard reads the
	// heartbeat under the daemon's key name.
	HashTag bool `json:"hash_tag,omitempty"`
}

// Order is what the daemon hands one guard.
type Order struct {
	Redis Redis         `json:"redis"`
	Ref   platforms.Ref `json:"ref"`
	Token string        `json:"token"`
	// Check is the interval between token reads (DefaultCheck when 0).
	Check time.Duration `json:"check"`
	// Heartbeat is the run heartbeat's TTL and the part of it the daemon
	// trusts after each renewal (the executor's trust.Window). A heartbeat
	// not renewed for Heartbeat.Trusted (its remaining TTL below
	// TTL - Trusted) means the daemon is frozen or cut off: it would have
	// killed the pipeline itself by now, so the guard does, before the
	// heartbeat expires and a successor can start. A guard that cannot
	// read Redis for Heartbeat.Trusted kills the pipeline likewise.
	Heartbeat trust.Window `json:"heartbeat"`
	// Instance is the daemon's instance id and Presence its liveness key's
	// TTL and trust window (pkg/presence). Another replica takes a run
	// over as soon as its owner's liveness key is gone, which comes long
	// before the heartbeat expires (15 s against 2 min by default); a
	// liveness key not renewed for Presence.Trusted means the daemon has
	// stopped its runs itself by now, or is frozen and cannot, so the
	// guard kills the pipeline then, before the key can expire. "" turns
	// the check off.
	Instance string       `json:"instance,omitempty"`
	Presence trust.Window `json:"presence"`
	// Parent is the daemon's pid: when the guard's parent is no longer it
	// (the daemon died and the guard was re-parented), nobody will write
	// the run's outcome, and the guard kills the group.
	Parent int `json:"parent"`
	// Path and Argv are the pipeline's command (Path resolved by
	// procrun.LookPath); Credential the user it runs as (nil: the guard's).
	Path       string              `json:"path"`
	Argv       []string            `json:"argv"`
	Credential *syscall.Credential `json:"credential,omitempty"`
	// Cgroup says the daemon started the guard in a run cgroup of its own
	// (pkg/runcg): the guard kills that whole cgroup when it kills the
	// run, which reaches every process of the run wherever it went.
	Cgroup bool `json:"cgroup,omitempty"`
	// Sandbox, when set, runs the pipeline in a sandbox of its own
	// (pkg/sandbox) whose init is SandboxExe: the guard stays outside,
	// with its network and its Redis connection, and the pipeline inside.
	Sandbox    *sandbox.Spec `json:"sandbox,omitempty"`
	SandboxExe string        `json:"sandbox_exe,omitempty"`
}

// ExitOwnFailure is the guard's exit status for a failure of its own, the
// pipeline not started: bad orders, no Redis client, or a run found no
// longer its own or not trusted before the start. A pipeline may exit with
// it too; the executor tells them apart by the guard's report (Main).
const ExitOwnFailure = 125

// Main is the guard process. It reads its Order from orders, starts the
// pipeline in its own process group (the one procrun made for the guard)
// with the guard's stdin, stdout, stderr, working directory and
// environment, and watches the run. It ends the way the pipeline ended: the
// same exit status, or the same signal raised on itself, so procrun's
// Result reads as if there were no guard. When the run is no longer its own
// it writes one line to stderr (the run's output) and SIGKILLs the group,
// itself included. Main returns only an exit status for a failure of its
// own (125, as env(1) and docker do), and writes why to report as well
// (nil: none): the daemon reads there that the guard, not the pipeline,
// failed, and why, when the output may be lost or cut. report is closed
// once the pipeline has started, and never reaches it.
func Main(orders, report *os.File, stderr io.Writer) int {
	// SIGTERM (timeout, shutdown) reaches the whole group: the pipeline
	// decides what to do with it and the guard waits for the pipeline, so
	// procrun's grace works as without a guard. Notify, not Ignore: an
	// ignored signal would stay ignored in the pipeline after exec.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if report != nil {
		syscall.CloseOnExec(int(report.Fd()))
	}
	closeReport := func() {
		if report != nil {
			_ = report.Close()
			report = nil
		}
	}
	defer closeReport()
	fail := func(format string, args ...any) int {
		why := fmt.Sprintf(format, args...)
		fmt.Fprintf(stderr, "agentsmithd guard: %s\n", why)
		if report != nil {
			_, _ = io.WriteString(report, why)
		}
		return ExitOwnFailure
	}
	raw, err := io.ReadAll(io.LimitReader(orders, maxOrder))
	_ = orders.Close() // before the pipeline starts: it must not inherit the fd
	if err != nil {
		return fail("read orders: %v", err)
	}
	var o Order
	if err := json.Unmarshal(raw, &o); err != nil {
		return fail("decode orders: %v", err)
	}
	if len(o.Argv) == 0 || o.Path == "" {
		return fail("orders name no command")
	}
	if err := keys.UseHashTag(o.Redis.HashTag); err != nil {
		return fail("key prefix: %v", err)
	}
	rdb, err := o.Redis.client()
	if err != nil {
		return fail("redis: %v", err)
	}
	defer rdb.Close()

	// The run is checked once before the pipeline starts, not only every
	// o.Check after: a daemon frozen between its own last check and
	// starting this guard wakes with a run another replica may have taken
	// over meanwhile, and that pipeline must never start. A check that
	// cannot reach Redis is left to the watch below (its unconfirmed limit),
	// as the daemon checked just before.
	pctx, cancel := context.WithTimeout(context.Background(), max(o.Check, time.Second))
	why, _ := check(pctx, o, rdb)
	cancel()
	if why != "" {
		return fail("%s; not starting the pipeline", why)
	}
	// Orphans of the pipeline come to the guard, not to init, however
	// they left its process group.
	if err := becomeSubreaper(); err != nil {
		return fail("become the pipeline's subreaper: %v", err)
	}
	// The pipeline's parent-death signal fires when the thread that
	// started it exits: this one, locked for the guard's life.
	runtime.LockOSThread()
	cmd := &exec.Cmd{Path: o.Path, Args: o.Argv, Env: os.Environ(),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: pipelineAttr(o.Credential)}
	var box *sandbox.Launch
	if o.Sandbox != nil {
		if o.Credential != nil {
			return fail("a sandboxed pipeline takes its user from the sandbox, not run_as")
		}
		cmd.SysProcAttr = pipelineAttr(nil)
		wd, err := os.Getwd()
		if err != nil {
			return fail("working directory: %v", err)
		}
		if !filepath.IsAbs(cmd.Path) {
			cmd.Path = filepath.Join(wd, cmd.Path)
		}
		if box, err = sandbox.Prepare(cmd, o.SandboxExe, *o.Sandbox); err != nil {
			return fail("%v", err)
		}
		defer box.Close()
	}
	if err := cmd.Start(); err != nil {
		return fail("start %s: %v", o.Argv[0], err)
	}
	if box != nil {
		// The guard joined its run's cgroups before it read its orders,
		// and the init with it.
		if err := box.Started(); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return fail("%v", err)
		}
	} else {
		closeReport()
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	if why := watch(o, rdb, exited, cmd.Process.Pid); why != "" {
		fmt.Fprintf(stderr, "agentsmithd guard: %s; killing the pipeline and every process it started\n", why)
		if o.Cgroup {
			if err := runcg.KillOwn(); err != nil {
				fmt.Fprintf(stderr, "agentsmithd guard: %v\n", err)
			}
		}
		killDescendants(cmd.Process.Pid)
		_ = syscall.Kill(-syscall.Getpgrp(), syscall.SIGKILL)
		select {} // the SIGKILL above is ours too
	}
	signal.Stop(sigs)
	// The pipeline has exited; nothing it started outlives it.
	if n := killDescendants(0); n > 0 {
		fmt.Fprintf(stderr, "agentsmithd guard: killed %d process(es) the pipeline left running\n", n)
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if box != nil {
		// The init, PID 1 of the sandbox, reports the pipeline's own
		// status; none means the sandbox was not set up, and the
		// pipeline never ran: the guard's failure, reported as such.
		// An init that ended without a word after its setup went with
		// the run (killed with it): the run's end, not the guard's.
		if pws, ok := box.Status(); ok {
			ws = pws
		} else if why := box.Failure(); why != "" {
			return fail("%s", why)
		}
	}
	closeReport()
	if ws.Signaled() {
		raise(ws.Signal())
		// A signal whose default action does not end a process cannot
		// have ended the pipeline; should one arrive here, the shell's
		// convention says which it was.
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// watch checks the run every o.Check until the pipeline exits ("") or the
// run stops being its own (the reason).
func watch(o Order, rdb redis.Cmdable, exited <-chan struct{}, pipeline int) string {
	every := o.Check
	if every <= 0 {
		every = DefaultCheck
	}
	t := time.NewTicker(every)
	defer t.Stop()
	confirmed := time.Now()
	for {
		select {
		case <-exited:
			return ""
		case <-t.C:
		}
		reapOrphans(pipeline)
		if o.Parent > 0 && os.Getppid() != o.Parent {
			return fmt.Sprintf("the daemon (pid %d) is gone", o.Parent)
		}
		ctx, cancel := context.WithTimeout(context.Background(), max(every, time.Second))
		why, err := check(ctx, o, rdb)
		cancel()
		switch {
		case why != "":
			return why
		case err != nil:
			// Unconfirmed for as long as the shorter trust window: the
			// daemon, cut off the same way, has stopped the run itself.
			if trusted := o.unconfirmedLimit(); trusted > 0 && time.Since(confirmed) > trusted {
				return fmt.Sprintf("the run of %s was not confirmed for %s (%v)", o.Ref, trusted, err)
			}
		default:
			confirmed = time.Now()
		}
	}
}

// check reads the run's heartbeat and, with o.Instance, the daemon's
// liveness key, and returns why the pipeline must die ("" while the run is
// its own and trusted).
func check(ctx context.Context, o Order, rdb redis.Cmdable) (string, error) {
	holder, left, err := runstate.Holder(ctx, rdb, o.Ref)
	hb := o.Heartbeat
	switch {
	case err != nil:
		return "", err
	case holder != o.Token:
		return fmt.Sprintf("the run of %s is no longer this pipeline's (heartbeat expired or taken over)", o.Ref), nil
	case hb.Trusted > 0 && left >= 0 && left < hb.TTL-hb.Trusted: // -1: no TTL at all, never expires
		return fmt.Sprintf("the heartbeat of %s was not renewed for %s (the daemon is frozen or cut off from Redis)", o.Ref, hb.Trusted), nil
	}
	pr := o.Presence
	if o.Instance == "" || pr.Trusted <= 0 {
		return "", nil
	}
	v, left, err := redislock.Holder(ctx, rdb, keys.Instance(o.Instance))
	switch {
	case err != nil:
		return "", err
	case v == "":
		return fmt.Sprintf("the daemon's liveness key (%s) is gone: another replica may take the run over", o.Instance), nil
	case left >= 0 && left < pr.TTL-pr.Trusted:
		return fmt.Sprintf("the daemon's liveness key (%s) was not renewed for %s (the daemon is frozen or cut off from Redis)", o.Instance, pr.Trusted), nil
	}
	return "", nil
}

// unconfirmedLimit is how long the guard runs on without a successful
// check: the shorter of the two trust windows it knows.
func (o Order) unconfirmedLimit() time.Duration {
	t := o.Heartbeat.Trusted
	if o.Instance != "" && o.Presence.Trusted > 0 && (t <= 0 || o.Presence.Trusted < t) {
		t = o.Presence.Trusted
	}
	return t
}

func (r Redis) client() (redis.UniversalClient, error) {
	opts := redisconn.Options{Mode: r.Mode, Addrs: r.Addrs, MasterName: r.MasterName, Username: r.Username,
		Password: r.Password, SentinelPassword: r.SentinelPassword, DB: r.DB, PoolSize: 1}
	if r.TLS != nil {
		tc, err := redisconn.TLSConfig(*r.TLS)
		if err != nil {
			return nil, err
		}
		opts.TLS = tc
	}
	return redisconn.New(opts)
}
