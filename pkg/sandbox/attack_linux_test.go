package sandbox

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
)

func TestAvailable(t *testing.T) {
	if err := Available(testExe); err != nil {
		t.Fatal(err)
	}
}

// listen opens a TCP listener standing for Redis or the admin listener.
func listen(t *testing.T, addr string) string {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s here: %v", addr, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	return l.Addr().String()
}

// TestNoNetwork: the host's loopback listeners (Redis, the admin API),
// the metadata address and the LAN are unreachable from a run.
func TestNoNetwork(t *testing.T) {
	redis := listen(t, "127.0.0.1:0")
	admin := listen(t, "127.0.0.2:0")
	for _, addr := range []string{redis, admin} {
		// Control: the same probe, unsandboxed, connects.
		if r := run(t, nil, testExe, helperArg, "connect", addr); r.code() != 0 {
			t.Fatalf("control: unsandboxed connect to %s failed: %v", addr, r)
		}
	}
	s := newSpec(t, reachableDir(t), "run")
	// Connect attempts only: inside there is no route, so nothing leaves.
	for _, addr := range []string{redis, admin, "169.254.169.254:80", "10.0.0.1:80", "[::1]:" + strings.Split(redis, ":")[1]} {
		r := run(t, &s, testExe, helperArg, "connect", addr)
		if r.code() != 1 {
			t.Errorf("sandboxed connect to %s: want failure (exit 1), got %v", addr, r)
		}
		t.Logf("%s", strings.TrimSpace(r.out))
	}
}

// TestNoDNS: names do not resolve inside (no interface but lo, nothing
// listens on lo's port 53). No control: a control would query the
// host's resolver, that is send traffic off the machine.
func TestNoDNS(t *testing.T) {
	s := newSpec(t, reachableDir(t), "run")
	r := run(t, &s, testExe, helperArg, "resolve", "example.com")
	if r.code() != 1 {
		t.Fatalf("example.com resolved inside: %v", r)
	}
	t.Logf("%s", strings.TrimSpace(r.out))
}

// TestProxyBridge: the only way out is the unix socket the daemon gives
// a run, reached inside at 127.0.0.1:ProxyPort (and [::1]).
func TestProxyBridge(t *testing.T) {
	base := reachableDir(t)
	sock := filepath.Join(base, "egress.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	if err := os.Chmod(sock, 0o666); err != nil { // the run's uid connects
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				_, _ = c.Write([]byte("echo:" + strings.ToUpper(string(b))))
			}()
		}
	}()
	s := newSpec(t, base, "run")
	s.Proxy = sock
	r := run(t, &s, testExe, helperArg, "echo", "127.0.0.1:3128", "hello")
	if r.code() != 0 || r.out != "echo:HELLO" {
		t.Fatalf("through the bridge: %v", r)
	}
	r = run(t, &s, testExe, helperArg, "echo", "[::1]:3128", "six")
	if r.code() != 0 || r.out != "echo:SIX" {
		t.Logf("[::1] bridge not available here: %v", r)
	}
	r = sh(t, &s, `echo "$HTTPS_PROXY $no_proxy"; ls -l `+ProxySocket)
	if !strings.HasPrefix(r.out, "http://127.0.0.1:3128 localhost,127.0.0.1,::1") {
		t.Fatalf("proxy env: %v", r)
	}
	// Without Proxy, the same port is closed.
	s2 := newSpec(t, base, "noproxy")
	if r := run(t, &s2, testExe, helperArg, "echo", "127.0.0.1:3128", "hello"); r.code() != 1 {
		t.Fatalf("no proxy, yet 127.0.0.1:3128 answered: %v", r)
	}
}

// childPID is the only child of pid (the init's pipeline).
func childPID(t *testing.T, pid int) int {
	t.Helper()
	return eventually.Value(t, 10*time.Second, "the init to start the pipeline", func() (int, bool) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
		if f := strings.Fields(string(b)); len(f) > 0 {
			n, err := strconv.Atoi(f[0])
			return n, err == nil
		}
		return 0, false
	})
}

// TestRunsIsolated: two concurrent runs with different host uids. A sees
// only its own processes, cannot see B's process (so not read its
// environ), cannot signal it, cannot reach B's work tree.
func TestRunsIsolated(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("two host uids need a root test run (unprivileged, every run is the test's uid)")
	}
	base := reachableDir(t)
	a, b := newSpec(t, base, "a"), newSpec(t, base, "b")
	if a.HostUID == b.HostUID {
		t.Fatalf("two leases gave one uid %d", a.HostUID)
	}
	secret := filepath.Join(b.WorkDir, "secret")
	if err := os.WriteFile(secret, []byte("B's token"), 0o644); err != nil {
		t.Fatal(err)
	}
	// B: a run holding its stdin until the test ends.
	pb := &prepared{t: t}
	pb.cmd = exec.Command("/bin/sh", "-c", "SECRET_B=env-secret exec cat >/dev/null")
	pb.cmd.Env = []string{"PATH=/usr/bin:/bin", "SECRET_B=env-secret"}
	in, err := pb.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pb.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if pb.l, err = Prepare(pb.cmd, testExe, b); err != nil {
		t.Fatal(err)
	}
	if err := pb.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := pb.l.Started(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = in.Close()
		if r := pb.wait(); r.code() != 0 {
			t.Errorf("B: %v", r)
		}
		pb.l.Close()
	}()
	bpid := strconv.Itoa(childPID(t, pb.cmd.Process.Pid))

	// Control: without the sandbox the probes succeed.
	for _, argv := range [][]string{{"kill", bpid}, {"read", "/proc/" + bpid + "/environ"}, {"read", secret}} {
		if r := run(t, nil, append([]string{testExe, helperArg}, argv...)...); r.code() != 0 {
			t.Fatalf("control %v: %v", argv, r)
		}
	}
	for _, argv := range [][]string{{"kill", bpid}, {"read", "/proc/" + bpid + "/environ"}, {"read", secret},
		{"write", filepath.Join(b.WorkDir, "planted")}} {
		r := run(t, &a, append([]string{testExe, helperArg}, argv...)...)
		if r.code() != 1 {
			t.Errorf("A %v: want failure, got %v", argv, r)
		}
		t.Logf("A %v: %s", argv, strings.TrimSpace(r.out))
	}
	// A's /proc holds A's processes only: the init, sh, ls, grep.
	r := sh(t, &a, `ls /proc | grep -cE '^[0-9]+$'; cat /proc/1/cmdline | tr '\0' ' '`)
	if n, _ := strconv.Atoi(strings.Fields(r.out)[0]); n > 4 || !strings.Contains(r.out, InitArg) {
		t.Errorf("A's /proc: %v", r)
	}
	// B's tree is 0700 and B's uid's: even a path that leaked in would
	// not open. Control for the uid: A's uid, unsandboxed, is refused.
	ctl := exec.Command(testExe, helperArg, "read", secret)
	ctl.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: a.HostUID, Gid: a.HostGID}}
	if out, err := ctl.CombinedOutput(); err == nil {
		t.Errorf("A's host uid reads B's tree: %s", out)
	}
}

// TestFilesystem: hidden files and unbound state are not readable,
// system paths are read-only, /tmp is writable and private to a run.
func TestFilesystem(t *testing.T) {
	base := reachableDir(t)
	work := filepath.Join(base, "work") // the daemon's work root
	state := filepath.Join(base, "state")
	config := filepath.Join(base, "config.yaml")
	for _, d := range []string{work, state, filepath.Join(work, "other-ticket")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, b := range map[string]string{config: "redis_password: hunter2", filepath.Join(state, "db"): "state",
		filepath.Join(work, "other-ticket", "token"): "other"} {
		if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Control: world-readable as they are, an unconfined pipeline reads them.
	for _, p := range []string{config, filepath.Join(state, "db"), filepath.Join(work, "other-ticket", "token")} {
		if r := run(t, nil, testExe, helperArg, "read", p); r.code() != 0 {
			t.Fatalf("control read %s: %v", p, r)
		}
	}
	s := newSpec(t, work, "T-1")
	// The run sees its work root read-only (say, for shared caches), but
	// the config beside it and the other ticket's tree are hidden, and
	// the state directory is not bound at all.
	s.ReadOnly = append(s.ReadOnly, base)
	s.Hide = []string{config, filepath.Join(work, "other-ticket"), state}
	s.Files = map[string][]byte{RunDir + "/ca.pem": []byte("PEM")}
	r := sh(t, &s, `
cat `+config+`; echo "config:$?"
cat `+filepath.Join(state, "db")+`; echo "state:$?"
ls -A `+state+`; cat `+filepath.Join(work, "other-ticket", "token")+`; echo "other:$?"
touch /usr/sandbox-probe; echo "usr:$?"
touch /etc/sandbox-probe; echo "etc:$?"
touch /sandbox-probe; echo "root:$?"
touch `+filepath.Join(base, "x")+`; echo "base:$?"
touch /run/agentsmith/x; echo "run:$?"
cat /run/agentsmith/ca.pem; echo "ca:$?"
(echo hi > /run/agentsmith/ca.pem) 2>/dev/null && echo cawrite:0 || echo cawrite:1
echo hi > /tmp/mine && cat /tmp/mine; echo "tmp:$?"
echo ok > ./out; echo "work:$?"
ls /sys 2>&1; echo "sys:$?"
`)
	t.Log(r.out, r.err)
	for _, want := range []string{"config:0", "state:1", "other:1", "usr:1", "etc:1", "root:1", "base:1", "run:1",
		"PEMca:0", "cawrite:1", "hi\ntmp:0", "work:0", "sys:2"} {
		if !strings.Contains(r.out, want+"\n") {
			t.Errorf("want %q in the run's output", want)
		}
	}
	if strings.Contains(r.out, "hunter2") || strings.Contains(r.out, "other\n") {
		t.Errorf("a hidden file was read: %q", r.out)
	}
	if !strings.Contains(r.err, "Read-only file system") {
		t.Errorf("writes to system paths did not fail with EROFS: %q", r.err)
	}
	if b, err := os.ReadFile(filepath.Join(s.WorkDir, "out")); err != nil || string(b) != "ok\n" {
		t.Errorf("the work tree write did not reach the host: %q %v", b, err)
	}
	// /tmp is the run's own: another run does not see the file, nor does
	// the host.
	if r := sh(t, &s, `test -e /tmp/mine; echo $?`); strings.TrimSpace(r.out) != "1" {
		t.Errorf("/tmp/mine survived into another run: %v", r)
	}
	if _, err := os.Stat("/tmp/mine"); err == nil {
		t.Errorf("/tmp/mine reached the host's /tmp")
	}
}

// TestNoPrivilegeGain: a set-uid-root binary gives the pipeline nothing
// (nosuid binds, no_new_privs), while the same binary, unsandboxed as
// the same host uid, runs as root.
func TestNoPrivilegeGain(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a set-uid-root binary needs a root test run")
	}
	s := newSpec(t, reachableDir(t), "run")
	suid := filepath.Join(s.WorkDir, "suid-id")
	b, err := os.ReadFile("/usr/bin/id")
	if err != nil {
		t.Skip("no /usr/bin/id")
	}
	if err := os.WriteFile(suid, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(suid, 0o4755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	ctl := exec.Command(suid, "-u")
	ctl.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: s.HostUID, Gid: s.HostGID}}
	out, err := ctl.Output()
	if err != nil || strings.TrimSpace(string(out)) != "0" {
		t.Skipf("control: the set-uid binary does not give root here (%q, %v): nosuid work tree?", out, err)
	}
	r := sh(t, &s, suid+` -u; grep CapEff /proc/self/status`)
	if !strings.HasPrefix(r.out, "1000\n") || !strings.Contains(r.out, "CapEff:\t0000000000000000") {
		t.Fatalf("set-uid inside: %v", r)
	}
}

// TestDaemonDies: a process that leaves the pipeline's group and session
// (setsid, a double fork) dies when the pipeline exits. Control: the
// same script unsandboxed leaves it running.
func TestDaemonDies(t *testing.T) {
	// The daemon is the orphaned grandchild of a subshell, in a session
	// of its own; the pipeline exits once it is running.
	script := `(setsid /bin/sh -c 'echo $$ > daemon.pid; exec sleep 300' &)
while ! test -s daemon.pid; do sleep 0.01; done; cat daemon.pid; rm daemon.pid`
	s := newSpec(t, reachableDir(t), "run")
	for _, sandboxed := range []bool{false, true} {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		cmd.Dir = s.WorkDir
		cmd.Stdout = pw // the daemon holds it open as long as it lives
		var l *Launch
		if sandboxed {
			if l, err = Prepare(cmd, testExe, s); err != nil {
				t.Fatal(err)
			}
			defer l.Close()
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		_ = pw.Close()
		if l != nil {
			if err := l.Started(); err != nil {
				t.Fatal(err)
			}
		}
		werr := cmd.Wait()
		_ = pr.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(pr)
		line, _ := br.ReadString('\n')
		if !sandboxed {
			pid, _ := strconv.Atoi(strings.TrimSpace(line))
			if werr != nil || pid == 0 || syscall.Kill(pid, 0) != nil {
				t.Fatalf("control: the daemon %q is not running after the pipeline exited (%v)", line, werr)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
			_ = pr.Close()
			continue
		}
		if ws, ok := l.Status(); !ok || ws.ExitStatus() != 0 {
			t.Fatalf("pipeline: %v %v %s", ws, ok, l.Failure())
		}
		rest, err := io.ReadAll(br)
		_ = pr.Close()
		if err != nil {
			t.Fatalf("the daemon (pid %q inside) still holds the output pipe 10s after the run ended (%q): %v", line, rest, err)
		}
	}
}

// TestExitStatus: the pipeline's exit code and signal come back through
// Status, and SIGTERM to the init's process group reaches the pipeline.
func TestExitStatus(t *testing.T) {
	s := newSpec(t, reachableDir(t), "run")
	if r := sh(t, &s, "exit 3"); r.code() != 3 {
		t.Errorf("exit 3: %v", r)
	}
	if r := sh(t, &s, "kill -TERM $$"); !r.ok || !r.ws.Signaled() || r.ws.Signal() != syscall.SIGTERM {
		t.Errorf("kill -TERM $$: %v", r)
	}

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	cmd := exec.Command("/bin/sh", "-c", `trap 'echo got TERM; exit 7' TERM; echo ready; while :; do sleep 1; done`)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Stdout = pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	l, err := Prepare(cmd, testExe, s)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = pw.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	if err := l.Started(); err != nil {
		t.Fatal(err)
	}
	_ = pr.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(pr)
	if line, err := br.ReadString('\n'); line != "ready\n" {
		t.Fatalf("pipeline did not start: %q %v", line, err)
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	ws, ok := l.Status()
	if !ok || ws.ExitStatus() != 7 {
		t.Fatalf("after SIGTERM: %v %v %s", ws, ok, l.Failure())
	}
}

// TestSetupFailure: a failed setup is reported with its step, exit 125,
// nothing started; a launcher that gives up before Started (a cgroup it
// could not join) leaves an init that exits without running anything.
func TestSetupFailure(t *testing.T) {
	s := newSpec(t, reachableDir(t), "run")
	s.Writable = []string{"/nonexistent/sandbox-test"}
	p := start(t, &s, "/bin/sh", "-c", "echo ran")
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 125 {
		t.Errorf("init exit: %v", err)
	}
	if _, ok := p.l.Status(); ok {
		t.Error("Status ok for a failed setup")
	}
	if f := p.l.Failure(); !strings.HasPrefix(f, "sandbox: bind /nonexistent/sandbox-test: ") || strings.Contains(p.out.String(), "ran") {
		t.Errorf("failure %q, stdout %q", f, p.out.String())
	}

	s = newSpec(t, reachableDir(t), "run2")
	cmd := exec.Command("/bin/sh", "-c", "echo ran")
	var out strings.Builder
	cmd.Stdout = &out
	l, err := Prepare(cmd, testExe, s)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := l.Started("/nonexistent-cgroup"); err == nil {
		t.Error("Started joined a cgroup that does not exist")
	}
	_ = cmd.Wait()
	if f := l.Failure(); !strings.Contains(f, "read spec") || out.String() != "" {
		t.Errorf("failure %q, stdout %q", f, out.String())
	}
}

// openPTY opens a new pseudo-terminal pair, the terminal side in raw mode
// (what is typed into it is readable at once, byte by byte), neither of
// them the test's controlling terminal.
func openPTY(t *testing.T) (master, term *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pty here (/dev/ptmx: %v): the terminal injection test needs one", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("no pty here (unlockpt: %v)", err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("no pty here (ptsname: %v)", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pty here (/dev/pts/%d: %v)", n, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	tio, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Lflag &^= unix.ICANON | unix.ECHO
	if err := unix.IoctlSetTermios(int(s.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	return m, s
}

// typedInto is what waits in term's input queue, as if typed, and drains it.
func typedInto(t *testing.T, term *os.File) string {
	t.Helper()
	n, err := unix.IoctlGetInt(int(term.Fd()), unix.TIOCINQ)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		return ""
	}
	b := make([]byte, n)
	n, _ = term.Read(b)
	return string(b[:n])
}

// TestNoTerminalInjection: a daemon started from an operator's terminal
// (under script, tmux, an ssh session) has it as its controlling
// terminal. The pipeline must not reach it: no /dev/tty inside, and, in
// a session of its own, no controlling terminal for TIOCSTI to type
// commands into the operator's shell, not even through a terminal it was
// handed as stdin. Control: the same probe, unsandboxed in the
// terminal's session, types into it.
func TestNoTerminalInjection(t *testing.T) {
	s := newSpec(t, reachableDir(t), "run")
	for _, sandboxed := range []bool{false, true} {
		_, term := openPTY(t)
		cmd := exec.Command(testExe, helperArg, "tiocsti", "id\n")
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		var out strings.Builder
		cmd.Stdin, cmd.Stdout, cmd.Stderr = term, &out, &out
		// The launching process (the daemon, here the init) leads a
		// session whose controlling terminal is the pty.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
		var l *Launch
		if sandboxed {
			var err error
			if l, err = Prepare(cmd, testExe, s); err != nil {
				t.Fatal(err)
			}
			defer l.Close()
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		if l != nil {
			if err := l.Started(); err != nil {
				t.Fatal(err)
			}
		}
		werr := cmd.Wait()
		typed := typedInto(t, term)
		t.Logf("sandboxed=%v: %s(typed %q)", sandboxed, out.String(), typed)
		if !sandboxed {
			if !strings.Contains(out.String(), "TIOCSTI /dev/tty: injected") || typed == "" {
				t.Logf("control: TIOCSTI does not inject here (dev.tty.legacy_tiocsti=0?): %v", werr)
			}
			if strings.Contains(out.String(), "open /dev/tty:") {
				t.Fatalf("control: /dev/tty does not open in the terminal's session: %s", out.String())
			}
			continue
		}
		ws, ok := l.Status()
		if !ok || ws.ExitStatus() != 1 || typed != "" {
			t.Errorf("the pipeline typed %q into the terminal (status %v ok=%v): %s", typed, ws, ok, out.String())
		}
		if !strings.Contains(out.String(), "open /dev/tty: open /dev/tty: no such file or directory") &&
			!strings.Contains(out.String(), "no such device or address") {
			t.Errorf("/dev/tty opened inside: %s", out.String())
		}
	}
}

// pendingSignals reports whether pid has a signal queued and not yet
// delivered (to the process or to one of its threads); gone when it has
// exited.
func pendingSignals(pid int) (pending, gone bool) {
	dir := "/proc/" + strconv.Itoa(pid)
	tasks, err := os.ReadDir(dir + "/task")
	if err != nil {
		return false, true
	}
	files := []string{dir + "/status"}
	for _, task := range tasks {
		files = append(files, dir+"/task/"+task.Name()+"/status")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && (k == "SigPnd" || k == "ShdPnd") && strings.Trim(v, "\t 0") != "" {
				return true, false
			}
			if k, v, ok := strings.Cut(line, ":"); ok && k == "State" && strings.HasPrefix(strings.TrimSpace(v), "Z") {
				return false, true
			}
		}
	}
	return false, false
}

// TestInitSurvivesSignals: the pipeline runs as the init's uid, so it may
// signal pid 1, and the kernel delivers every signal the init has a
// handler for, which Go installs for nearly all. None of them may end
// the init (Go's default for SIGQUIT and SIGABRT is a goroutine dump and
// exit 2, for a SIGSEGV or SIGBUS sent with kill a crash): the run's
// status would be lost and the namespace with it. The pipeline signals
// pid 1, the test waits until the init has taken every signal, then
// lets the pipeline exit 7, which must come back from the init.
func TestInitSurvivesSignals(t *testing.T) {
	s := newSpec(t, reachableDir(t), "run")
	cmd := exec.Command("/bin/sh", "-c", `for sig in QUIT ABRT SEGV BUS FPE ILL TRAP SYS USR1 USR2 PIPE ALRM; do
	kill -s $sig 1 || exit 9
done
echo sent; read x; exit 7`)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = pw, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	l, err := Prepare(cmd, testExe, s)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = pw.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	if err := l.Started(); err != nil {
		t.Fatal(err)
	}
	_ = pr.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := bufio.NewReader(pr).ReadString('\n'); line != "sent\n" {
		_ = in.Close()
		_ = cmd.Wait()
		ws, ok := l.Status()
		t.Fatalf("the pipeline did not signal pid 1: %q %v (status %v ok=%v, stderr %q)", line, err, ws, ok, stderr.String())
	}
	gone := eventually.Value(t, 10*time.Second, "the init to take its signals", func() (bool, bool) {
		pending, gone := pendingSignals(cmd.Process.Pid)
		return gone, gone || !pending
	})
	if gone {
		t.Errorf("the init exited on the pipeline's signals")
	}
	_ = in.Close()
	werr := cmd.Wait()
	ws, ok := l.Status()
	if !ok || !ws.Exited() || ws.ExitStatus() != 7 || cmd.ProcessState.ExitCode() != 7 {
		msg := stderr.String()
		if len(msg) > 400 {
			msg = msg[:400] + "…"
		}
		t.Fatalf("pipeline status %v ok=%v, init %v: stderr %q", ws, ok, werr, msg)
	}
}
