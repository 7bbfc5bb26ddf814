package runguard_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runguard"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/pkg/sandbox"
	"github.com/agentsmithd/agentsmithd/pkg/trust"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// TestMain lets the test binary be the guard binary: `runguard.test guard`
// runs Main, as `agentsmithd guard` does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "guard" {
		os.Exit(runguard.Main(os.NewFile(3, "orders"), os.NewFile(4, "report"), os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitArg {
		os.Exit(sandbox.Init())
	}
	os.Exit(m.Run())
}

const password = "guard-test-Pa55word"

var ref = platforms.Ref{Platform: "github", Project: "acme/app", ID: "7"}

// setup starts a password-protected redis-server, takes ref's run for
// token "A" with a long TTL (nothing in these tests renews or expires it)
// and returns a client and a launcher whose guards check every 100 ms.
func setup(t *testing.T) (*redis.Client, *runguard.Launcher) {
	t.Helper()
	srv := redistest.StartSpec(t, redistest.Spec{Args: []string{"--requirepass", password}, Password: password})
	rdb := srv.Client(t)
	res, err := runstate.Take(t.Context(), rdb, runstate.Record{Ref: ref, Instance: "i1", Token: "A", Attempt: 1},
		runstate.TakeArgs{TTL: time.Hour, Now: time.Now()})
	if err != nil || res.Result != runstate.Taken {
		t.Fatalf("take run: %v %v", res, err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return rdb, &runguard.Launcher{Exe: exe, Redis: runguard.Redis{Addrs: []string{srv.Addr()}, Password: password},
		Check: 100 * time.Millisecond}
}

// run runs spec under a guard for token "A" in the background.
func run(t *testing.T, l *runguard.Launcher, spec procrun.Spec) (<-chan procrun.Result, *syncBuffer) {
	return runCtx(t, context.Background(), l, spec)
}

func runCtx(t *testing.T, ctx context.Context, l *runguard.Launcher, spec procrun.Spec) (<-chan procrun.Result, *syncBuffer) {
	t.Helper()
	out := &syncBuffer{}
	spec.Output = out
	spec.Env = append(spec.Env, "PATH=/usr/bin:/bin")
	guarded, done, err := l.Wrap(spec, ref, "A", trust.Fraction(time.Hour, trust.DefaultHeartbeatTrust))
	if err != nil {
		t.Fatal(err)
	}
	resc := make(chan procrun.Result, 1)
	go func() {
		res := procrun.Run(ctx, guarded)
		done()
		resc <- res
	}()
	return resc, out
}

// TestGuardKillsGroupWhenRunTakenOver is the frozen daemon: nothing on the
// daemon's side renews or watches the run (procrun's Kill is never
// closed), another owner takes the ticket's run, and the guard alone kills
// the pipeline and its background child within its check interval.
func TestGuardKillsGroupWhenRunTakenOver(t *testing.T) {
	rdb, l := setup(t)
	dir := t.TempDir()
	resc, out := run(t, l, procrun.Spec{Argv: []string{"/bin/sh", "-c",
		`sleep 1000 & echo $! > child.pid; echo $$ > leader.pid.tmp; mv leader.pid.tmp leader.pid; wait`}, Dir: dir})
	leader := waitPid(t, filepath.Join(dir, "leader.pid"))
	child := waitPid(t, filepath.Join(dir, "child.pid"))

	// The run's heartbeat goes to another owner, as StaleJobDetector and a
	// re-run elsewhere do while the daemon sleeps.
	if ok, err := runstate.Evict(t.Context(), rdb, ref, "A"); err != nil || !ok {
		t.Fatalf("evict: %v %v", ok, err)
	}
	if res, err := runstate.Take(t.Context(), rdb, runstate.Record{Ref: ref, Instance: "i2", Token: "B", Attempt: 2},
		runstate.TakeArgs{TTL: time.Hour, Now: time.Now()}); err != nil || res.Result != runstate.Taken {
		t.Fatalf("take run for B: %v %v", res, err)
	}
	taken := time.Now()
	var res procrun.Result
	select {
	case res = <-resc:
	case <-time.After(10 * time.Second):
		t.Fatal("the pipeline still runs 10 s after its run was taken over")
	}
	t.Logf("pipeline group gone %s after the takeover (check interval %s)", time.Since(taken), l.Check)
	if res.Signal != "killed" {
		t.Errorf("result %s, want killed by signal killed", res.Describe())
	}
	if !strings.Contains(out.String(), "no longer this pipeline's") {
		t.Errorf("output does not say why the guard killed the run:\n%s", out.String())
	}
	for _, pid := range []int{leader, child} {
		waitGone(t, pid)
	}
	// The new owner's run is untouched.
	if ok, err := runstate.Check(t.Context(), rdb, ref, "B"); err != nil || !ok {
		t.Errorf("B's run: %v %v", ok, err)
	}
}

// TestGuardKillsFrozenDaemonsPipelineBeforeExpiry is the daemon frozen
// (SIGSTOP) while its pipeline runs: the heartbeat is not renewed, and the
// guard kills the pipeline once it has gone unrenewed for the trusted part
// of its TTL, while the heartbeat still holds the run's token, so no
// successor can have started yet. A daemon that keeps renewing keeps its
// pipeline.
func TestGuardKillsFrozenDaemonsPipelineBeforeExpiry(t *testing.T) {
	rdb, l := setup(t)
	hb := trust.Fraction(3*time.Second, 0.5) // killed 1.5 s after the last renewal, 1.5 s before expiry
	renew := func() {
		if ok, err := runstate.Renew(t.Context(), rdb, ref, "A", hb.TTL); err != nil || !ok {
			t.Fatalf("renew: %v %v", ok, err)
		}
	}

	// Renewed every 300 ms (the test is the daemon): the pipeline runs
	// twice the trusted window and ends on its own.
	renew()
	stopRenewing := every(300*time.Millisecond, func() { _, _ = runstate.Renew(context.Background(), rdb, ref, "A", hb.TTL) })
	spec := func() procrun.Spec {
		return procrun.Spec{Argv: []string{"/bin/sleep", "3"}, Dir: t.TempDir()}
	}
	guarded, done, err := l.Wrap(spec(), ref, "A", hb)
	if err != nil {
		t.Fatal(err)
	}
	res := procrun.Run(t.Context(), guarded)
	done()
	stopRenewing()
	if !res.OK() {
		t.Fatalf("a renewed run's pipeline: %s, want exit status 0", res.Describe())
	}

	// Frozen: renewed once, then never again.
	renew()
	out := &syncBuffer{}
	s := spec()
	s.Argv, s.Output = []string{"/bin/sleep", "1000"}, out
	guarded, done, err = l.Wrap(s, ref, "A", hb)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	res = procrun.Run(t.Context(), guarded)
	holder, left, err := runstate.Holder(t.Context(), rdb, ref)
	if err != nil {
		t.Fatal(err)
	}
	if res.Signal != "killed" || !strings.Contains(out.String(), "was not renewed") {
		t.Errorf("result %s, output %q: want killed for a heartbeat not renewed", res.Describe(), out.String())
	}
	if holder != "A" || left <= 0 {
		t.Errorf("heartbeat held by %q for %s more when the pipeline was gone: want still A's, killed before expiry", holder, left)
	}
	t.Logf("pipeline gone with %s of the heartbeat left", left)
}

// TestGuardIsTransparent: while the run is its own the guard changes
// nothing the pipeline sees or returns — exit status, environment, stdin,
// SIGTERM with grace on timeout — and the Redis password reaches neither
// the pipeline's environment and fds nor the guard's command line or
// environment.
func TestGuardIsTransparent(t *testing.T) {
	_, l := setup(t)
	res, out := run(t, l, procrun.Spec{Argv: []string{"/bin/sh", "-c", `
read line; echo "stdin=$line"; echo "env=$TICKET"
[ -e /proc/$$/fd/3 ] && echo "fd 3 leaked"
cat /proc/$$/environ /proc/$PPID/cmdline /proc/$PPID/environ | tr '\0' '\n' | grep -c ` + password + `
exit 3`}, Env: []string{"TICKET=7"}, Stdin: []byte("hello\n"), Dir: t.TempDir()})
	r := <-res
	if r.ExitCode != 3 || r.Signal != "" {
		t.Errorf("result %s, want exit status 3", r.Describe())
	}
	got := out.String()
	for _, want := range []string{"stdin=hello\n", "env=7\n", "\n0\n"} {
		if !strings.Contains("\n"+got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "fd 3 leaked") {
		t.Errorf("the orders pipe reached the pipeline:\n%s", got)
	}

	// Shutdown's SIGTERM reaches the pipeline, which exits on its own
	// terms within the grace: the guard waits for it and reports its
	// status, it does not die first.
	ctx, cancel := context.WithCancel(t.Context())
	dir := t.TempDir()
	res, _ = runCtx(t, ctx, l, procrun.Spec{Argv: []string{"/bin/sh", "-c", `trap 'exit 7' TERM; sleep 1000 & echo $$ > ready; wait`},
		Grace: 10 * time.Second, Dir: dir})
	waitPid(t, filepath.Join(dir, "ready"))
	cancel()
	if r := <-res; r.ExitCode != 7 || !r.Canceled {
		t.Errorf("result %s, want exit status 7 on shutdown", r.Describe())
	}

	// A pipeline killed by a signal reads as killed by that signal.
	res, _ = run(t, l, procrun.Spec{Argv: []string{"/bin/sh", "-c", `kill -USR1 $$`}, Dir: t.TempDir()})
	if r := <-res; r.Signal != syscall.SIGUSR1.String() {
		t.Errorf("result %s, want killed by signal %s", r.Describe(), syscall.SIGUSR1)
	}
}

// TestGuardKillsWhenRedisUnconfirmed: a guard that cannot confirm its
// token for longer than the trust window kills the run, since someone
// else may own it by then.
func TestGuardKillsWhenRedisUnconfirmed(t *testing.T) {
	_, l := setup(t)
	l.Redis.Password = "wrong"
	out := &syncBuffer{}
	guarded, done, err := l.Wrap(procrun.Spec{Argv: []string{"/bin/sleep", "1000"}, Output: out}, ref, "A",
		trust.Window{TTL: time.Hour, Trusted: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	r := procrun.Run(t.Context(), procrun.Spec{Argv: guarded.Argv, ExtraFiles: guarded.ExtraFiles, Started: guarded.Started, Output: out, Timeout: 20 * time.Second})
	if r.Signal != "killed" || r.TimedOut {
		t.Errorf("result %s, want killed before the timeout", r.Describe())
	}
	if !strings.Contains(out.String(), "was not confirmed") {
		t.Errorf("output:\n%s", out.String())
	}
}

// TestGuardKillsWhenDaemonGone: a guard whose parent is not the daemon
// that started it (the daemon was kill -9ed and the guard re-parented)
// kills the pipeline, though the run's heartbeat still holds its token.
func TestGuardKillsWhenDaemonGone(t *testing.T) {
	_, l := setup(t)
	// The test binary starts the guard, so its parent is not this pid.
	defer runguard.SetDaemonPID(os.Getpid() + 1_000_000)()
	res, out := run(t, l, procrun.Spec{Argv: []string{"/bin/sleep", "1000"}, Dir: t.TempDir()})
	select {
	case r := <-res:
		if r.Signal != "killed" || !strings.Contains(out.String(), "is gone") {
			t.Errorf("result %s, output %q: want killed because the daemon is gone", r.Describe(), out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pipeline still runs 10 s after its guard started without its daemon")
	}
}

func waitPid(t *testing.T, path string) int {
	t.Helper()
	return eventually.Value(t, 10*time.Second, path+" to hold a pid", func() (int, bool) {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, false
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		return pid, err == nil && pid > 0
	})
}

// waitGone waits until pid no longer exists or is a zombie.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	eventually.Wait(t, 10*time.Second, fmt.Sprintf("process %d to be gone", pid), func() bool {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		return len(f) > 0 && f[0] == "Z"
	})
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestGuardKillsBeforeTheDaemonsLivenessKeyExpires is the frozen daemon
// whose liveness key lapses long before the run's heartbeat (15 s against
// 2 min by default): another replica takes over a run as soon as the
// owner's liveness key is gone, so the guard holds that key to the
// daemon's own presence trust and kills the pipeline while the key still
// exists. A daemon that keeps renewing the key keeps its pipeline, and a
// liveness key that is gone outright kills at once.
func TestGuardKillsBeforeTheDaemonsLivenessKeyExpires(t *testing.T) {
	rdb, l := setup(t)
	const instance = "i1"
	l.Instance, l.Presence = instance, trust.Fraction(2*time.Second, 0.5) // killed 1 s after the last renewal, 1 s before expiry
	key := keys.Instance(instance)
	renew := func() {
		if err := rdb.Set(t.Context(), key, instance, l.Presence.TTL).Err(); err != nil {
			t.Fatalf("renew liveness: %v", err)
		}
	}

	// Renewed every 300 ms: a 2.5 s pipeline outlives the trusted second
	// and ends on its own.
	renew()
	stopRenewing := every(300*time.Millisecond, func() { _ = rdb.Set(context.Background(), key, instance, l.Presence.TTL).Err() })
	res, out := run(t, l, procrun.Spec{Argv: []string{"/bin/sleep", "2.5"}, Dir: t.TempDir()})
	r := <-res
	stopRenewing()
	if !r.OK() {
		t.Fatalf("a live daemon's pipeline: %s (%q), want exit status 0", r.Describe(), out.String())
	}

	// Frozen: renewed once, then never again. The heartbeat (an hour)
	// stays valid throughout; the liveness key is what kills.
	renew()
	res, out = run(t, l, procrun.Spec{Argv: []string{"/bin/sleep", "1000"}, Dir: t.TempDir()})
	r = <-res
	left, err := rdb.PTTL(t.Context(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if r.Signal != "killed" || !strings.Contains(out.String(), "liveness key (i1) was not renewed") {
		t.Errorf("result %s, output %q: want killed for a liveness key not renewed", r.Describe(), out.String())
	}
	if left <= 0 {
		t.Errorf("liveness key had %s left when the pipeline was gone: want killed before it expired", left)
	}
	t.Logf("pipeline gone with %s of the liveness key left", left)

	// Gone outright (the key deleted while the pipeline runs): killed at
	// the next check. (Gone before the guard starts, the pipeline never
	// starts: TestGuardNeverStartsARunTakenOverBeforeIt's check.)
	renew()
	stopRenewing = every(300*time.Millisecond, func() { _ = rdb.Set(context.Background(), key, instance, l.Presence.TTL).Err() })
	dir := t.TempDir()
	res, out = run(t, l, procrun.Spec{Argv: []string{"/bin/sh", "-c", `echo $$ > ready; exec sleep 1000`}, Dir: dir})
	waitPid(t, filepath.Join(dir, "ready"))
	stopRenewing()
	if err := rdb.Del(t.Context(), key).Err(); err != nil {
		t.Fatal(err)
	}
	if r := <-res; r.Signal != "killed" || !strings.Contains(out.String(), "liveness key (i1) is gone") {
		t.Errorf("result %s, output %q: want killed for a liveness key that is gone", r.Describe(), out.String())
	}
}

// every calls f every period (the test playing a live daemon that renews
// its keys) until the returned stop is called; stop returns once f has
// stopped being called.
func every(period time.Duration, f func()) (stop func()) {
	quit, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				f()
			}
		}
	}()
	return func() { close(quit); <-stopped }
}

// TestGuardNeverStartsARunTakenOverBeforeIt is the daemon frozen between
// its last check of the run and starting the guard: by the time the guard
// runs, the run is another owner's, and the pipeline must not start at
// all, not even until the first periodic check.
func TestGuardNeverStartsARunTakenOverBeforeIt(t *testing.T) {
	rdb, l := setup(t)
	if ok, err := runstate.Evict(t.Context(), rdb, ref, "A"); err != nil || !ok {
		t.Fatalf("evict: %v %v", ok, err)
	}
	if res, err := runstate.Take(t.Context(), rdb, runstate.Record{Ref: ref, Instance: "i2", Token: "B", Attempt: 2},
		runstate.TakeArgs{TTL: time.Hour, Now: time.Now()}); err != nil || res.Result != runstate.Taken {
		t.Fatalf("take run for B: %v %v", res, err)
	}
	dir := t.TempDir()
	resc, out := run(t, l, procrun.Spec{Argv: []string{"/bin/sh", "-c", `touch started; sleep 1000`}, Dir: dir})
	r := <-resc
	if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
		t.Errorf("the pipeline of a run taken over started (result %s)", r.Describe())
	}
	if r.ExitCode != 125 || !strings.Contains(out.String(), "not starting the pipeline") {
		t.Errorf("result %s, output %q: want exit status 125 saying why nothing started", r.Describe(), out.String())
	}
}
