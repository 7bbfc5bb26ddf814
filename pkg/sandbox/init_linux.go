package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Init is the body of `EXE sandbox-init` (InitArg): the caller's main, or
// a test binary's TestMain, runs os.Exit(Init()) when os.Args[1] is
// InitArg. It is pid 1 of the run's namespaces, started by Prepare's
// command: it waits for its spec (Started), builds the sandbox, runs the
// pipeline, reaps every orphan, and exits when the pipeline has, with
// the pipeline's exit code (128+signal for a signal). A setup failure is
// written to stderr and the status pipe as "sandbox: <step>: <error>"
// and exits 125 with nothing started.
func Init() int {
	// Inherited fds are not close-on-exec; the pipeline gets only those
	// it is given.
	_ = unix.CloseRange(specFD, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	status := os.NewFile(statusFD, "status")
	failed := func(err error) int {
		msg := err.Error()
		if !strings.HasPrefix(msg, "sandbox: ") {
			msg = "sandbox: " + msg
		}
		msg = strings.ReplaceAll(msg, "\n", " ")
		fmt.Fprintln(os.Stderr, msg)
		fmt.Fprintf(status, "fail %s\n", msg)
		return 125
	}
	// The pipeline runs as the same host uid: non-dumpable, the init
	// cannot be ptraced by it, nor its /proc/1/mem, environ or exe opened.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return failed(fail("non-dumpable", err))
	}
	// Capabilities, the bounding set and no_new_privs are per thread: this
	// thread drops them and forks the pipeline, so it must stay this
	// goroutine's (never unlocked: it ends with the process).
	runtime.LockOSThread()
	if os.Getpid() != 1 {
		return failed(errors.New("sandbox: not pid 1 of a new pid namespace: sandbox-init is started by sandbox.Prepare"))
	}
	w, err := readWire()
	if err != nil {
		return failed(fail("read spec", err))
	}
	s := w.Spec
	if err := buildRoot(s); err != nil {
		return failed(err)
	}
	if err := unix.Sethostname([]byte(s.Hostname)); err != nil {
		return failed(fail("sethostname", err))
	}
	if err := loUp(); err != nil {
		return failed(fail("bring lo up", err))
	}
	if s.Proxy != "" {
		if err := listenProxy(s.ProxyPort); err != nil {
			return failed(fail("proxy listener", err))
		}
	}
	if err := unix.Chdir(s.WorkDir); err != nil {
		return failed(fail("chdir "+s.WorkDir, err))
	}
	// Signals for the run go to the pipeline's group. Installed before the
	// pipeline exists, so none is lost; a pid 1 ignores what it has no
	// handler for.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	// Every other signal is taken and dropped. The pipeline runs as the
	// init's uid, so it may signal pid 1, and the kernel delivers to a
	// namespace's init every signal it has a handler for: Go installs one
	// for nearly all, and its own answer to some would end the init and
	// the run's status with it (SIGQUIT, SIGABRT, SIGILL, SIGTRAP, SIGSYS:
	// a goroutine dump and exit 2; SIGSEGV, SIGBUS, SIGFPE: a crash). A
	// notified signal sent with kill goes to the channel instead; a real
	// fault of the init's own is still a panic.
	dropped := make(chan os.Signal, 16)
	signal.Notify(dropped, droppedSignals()...)
	go func() {
		for range dropped {
		}
	}()
	if err := dropPrivileges(); err != nil {
		return failed(fail("drop privileges", err))
	}
	if w.Probe {
		fmt.Fprintf(status, "exit 0\n")
		return 0
	}
	if s.Nproc > 0 {
		// Process-wide and inherited: the pipeline starts under it and,
		// without CAP_SYS_RESOURCE, cannot raise it; nor can the init
		// lower it for the pipeline alone.
		if err := unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: s.Nproc, Max: s.Nproc}); err != nil {
			return failed(fail("limit processes", err))
		}
	}
	files := []uintptr{0, 1, 2}
	for i := 0; i < w.Extra; i++ {
		files = append(files, uintptr(extraFD+i))
	}
	// A session of its own, so no controlling terminal: the init may be in
	// the daemon's session, whose terminal (an operator's, under script
	// or tmux) the pipeline could otherwise open as /dev/tty and type
	// commands into with TIOCSTI. The session is also the process group
	// the signals above go to.
	pid, err := syscall.ForkExec(w.Path, w.Args, &syscall.ProcAttr{Dir: s.WorkDir, Env: w.Env, Files: files,
		Sys: &syscall.SysProcAttr{Setsid: true}})
	if err != nil {
		return failed(fail("start "+w.Path, err))
	}
	go func() {
		for sig := range sigs {
			_ = syscall.Kill(-pid, sig.(syscall.Signal))
		}
	}()
	for {
		var ws syscall.WaitStatus
		p, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			// ECHILD: cannot be while the pipeline is unreaped.
			return failed(fail("wait", err))
		}
		if p != pid {
			continue // an orphan re-parented to pid 1
		}
		fmt.Fprintf(status, "exit %d\n", uint32(ws))
		// Returning ends pid 1, and the kernel kills what is left in the
		// namespace.
		switch {
		case ws.Exited():
			return ws.ExitStatus()
		case ws.Signaled():
			return 128 + int(ws.Signal())
		}
		return 1
	}
}

// forwarded are the signals the init passes on to the pipeline's group.
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP}

// droppedSignals are the init's other catchable signals, 1 to 31 (the
// real-time ones above have no default action in Go, which ignores them).
func droppedSignals() []os.Signal {
	var out []os.Signal
	for sig := syscall.Signal(1); sig <= 31; sig++ {
		if sig == syscall.SIGKILL || sig == syscall.SIGSTOP || slices.Contains(forwarded, os.Signal(sig)) {
			continue
		}
		out = append(out, sig)
	}
	return out
}

// readWire reads the spec Started writes on fd 3.
func readWire() (wire, error) {
	var w wire
	f := os.NewFile(specFD, "spec")
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSpecWire+1))
	if err != nil {
		return w, err
	}
	if len(b) == 0 {
		return w, errors.New("none: the launcher gave up before handing it over")
	}
	if len(b) > maxSpecWire {
		return w, errors.New("too large")
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return w, err
	}
	return w, nil
}

// dropPrivileges leaves the calling thread, and so the pipeline it forks,
// with no capability now or after any exec: no_new_privs (set-uid bits
// and file capabilities are ignored), an empty bounding set (which needs
// CAP_SETPCAP, so first), no ambient, inheritable, permitted or effective
// capabilities.
func dropPrivileges() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	last := lastCap()
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("bounding set: capability %d: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("ambient set: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// lastCap is the highest capability this kernel knows.
func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return n
		}
	}
	return 63
}
