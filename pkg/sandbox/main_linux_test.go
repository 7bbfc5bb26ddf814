package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// testExe is a copy of the test binary every uid can run: go test builds
// it below a 0700 directory, which a run's host uid cannot reach. It is
// both the sandbox's init (TestMain dispatches InitArg) and the helper
// the attack tests run inside (helperArg).
var testExe string

const helperArg = "sandbox-test-helper"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case InitArg:
			os.Exit(Init())
		case helperArg:
			os.Exit(helper(os.Args[2:]))
		}
	}
	dir, err := os.MkdirTemp("", "sandbox-test-exe-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err == nil {
		testExe = filepath.Join(dir, "sandbox.test")
		err = copyFile(testExe)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "copy test binary:", err)
		os.Exit(2)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func copyFile(to string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	in, err := os.Open(self)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// helper is what the tests run as (or inside) the pipeline: small probes
// with exact exit codes, where a shell would need tools the host may lack.
func helper(args []string) int {
	if len(args) == 0 {
		return 2
	}
	switch args[0] {
	case "connect": // connect ADDR...: exit 0 if any connect succeeded
		ok := false
		for _, a := range args[1:] {
			c, err := net.DialTimeout("tcp", a, 2*time.Second)
			if err == nil {
				fmt.Printf("%s connected\n", a)
				_ = c.Close()
				ok = true
				continue
			}
			fmt.Printf("%s %v\n", a, err)
		}
		if ok {
			return 0
		}
		return 1
	case "resolve": // resolve NAME: exit 0 if it resolved
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		addrs, err := net.DefaultResolver.LookupHost(ctx, args[1])
		if err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Println(addrs)
		return 0
	case "echo": // echo ADDR MSG: send MSG, half-close, print the reply
		c, err := net.DialTimeout("tcp", args[1], 2*time.Second)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		defer c.Close()
		_, _ = io.WriteString(c, args[2])
		_ = c.(*net.TCPConn).CloseWrite()
		b, err := io.ReadAll(c)
		fmt.Print(string(b))
		if err != nil {
			return 1
		}
		return 0
	case "kill": // kill PID: exit 0 if signal 0 could be sent
		var pid int
		_, _ = fmt.Sscan(args[1], &pid)
		if err := syscall.Kill(pid, 0); err != nil {
			fmt.Println(err)
			return 1
		}
		return 0
	case "read": // read PATH: exit 0 and print it if readable
		b, err := os.ReadFile(args[1])
		if err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Print(string(b))
		return 0
	case "tiocsti": // tiocsti TEXT: type TEXT into the controlling terminal (through /dev/tty) and stdin; exit 0 if any byte went in
		injected := false
		typeInto := func(name string, fd int) {
			for _, c := range []byte(args[1]) {
				if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCSTI, uintptr(unsafe.Pointer(&c))); e != 0 {
					fmt.Printf("TIOCSTI %s: %v\n", name, e)
					return
				}
			}
			fmt.Printf("TIOCSTI %s: injected\n", name)
			injected = true
		}
		if f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err != nil {
			fmt.Printf("open /dev/tty: %v\n", err)
		} else {
			typeInto("/dev/tty", int(f.Fd()))
			_ = f.Close()
		}
		typeInto("stdin", 0)
		if injected {
			return 0
		}
		return 1
	case "forks": // forks N: start N children that wait for this one to exit; exit 0 if all started
		var n int
		_, _ = fmt.Sscan(args[1], &n)
		r, w, err := os.Pipe()
		if err != nil {
			fmt.Println(err)
			return 2
		}
		defer w.Close() // the children's stdin: they end with this process
		started := 0
		for ; started < n; started++ {
			// cat: one thread each, where a Go child would start several.
			if _, err = syscall.ForkExec("/bin/cat", []string{"cat"}, &syscall.ProcAttr{Files: []uintptr{r.Fd()}}); err != nil {
				break
			}
		}
		fmt.Printf("started %d: %v\n", started, err)
		if err != nil {
			return 1
		}
		return 0
	case "fill": // fill PATH BYTES: write BYTES to a new file PATH; exit 0 if all were written
		var n int
		_, _ = fmt.Sscan(args[2], &n)
		f, err := os.Create(args[1])
		if err == nil {
			_, err = f.Write(make([]byte, n))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Println(err)
			if errors.Is(err, syscall.ENOSPC) {
				fmt.Println("ENOSPC")
			}
			return 1
		}
		return 0
	case "write": // write PATH: exit 0 if it could be created
		err := os.WriteFile(args[1], []byte("x"), 0o644)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		return 0
	}
	return 2
}

// hostIDs gives a test a host uid and gid of its own: a leased one as
// root, the test's own otherwise (then runs share it).
func hostIDs(t testing.TB, hint string) (uint32, uint32) {
	if os.Geteuid() != 0 {
		return uint32(os.Getuid()), uint32(os.Getgid())
	}
	l, err := LeaseUID(DefaultRange, hint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Release() })
	return l.UID(), l.UID()
}

// reachableDir is a directory every uid can pass through (t.TempDir's
// parent is 0700) and below which tests make work trees.
func reachableDir(t testing.TB) string {
	d, err := os.MkdirTemp("", "sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o711); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// newSpec is a spec for one run: its own host uid, its own work tree
// (owned by that uid, mode 0700), the system read-only, the test binary.
func newSpec(t testing.TB, base, name string) Spec {
	uid, gid := hostIDs(t, t.Name()+"/"+name)
	wd := filepath.Join(base, name)
	if err := os.Mkdir(wd, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(wd, int(uid), int(gid)); err != nil {
		t.Fatal(err)
	}
	return Spec{HostUID: uid, HostGID: gid, WorkDir: wd,
		ReadOnly: append(DefaultReadOnly(), filepath.Dir(testExe))}
}

// result is one run's outcome.
type result struct {
	out, err string
	ws       syscall.WaitStatus
	ok       bool
	failure  string
}

// prepared is a started but not yet waited-for run.
type prepared struct {
	t        testing.TB
	cmd      *exec.Cmd
	l        *Launch
	out, err bytes.Buffer
}

// start starts argv in a sandbox (s.WorkDir == "": unsandboxed, the
// control run).
func start(t testing.TB, s *Spec, argv ...string) *prepared {
	t.Helper()
	p := &prepared{t: t}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LC_ALL=C"}
	if s != nil {
		p.cmd.Env = append(p.cmd.Env, s.ProxyEnv()...)
	}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.err
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if s != nil {
		l, err := Prepare(p.cmd, testExe, *s)
		if err != nil {
			t.Fatal(err)
		}
		p.l = l
		t.Cleanup(l.Close)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	if p.l != nil {
		if err := p.l.Started(); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func (p *prepared) wait() result {
	p.t.Helper()
	err := p.cmd.Wait()
	r := result{out: p.out.String(), err: p.err.String()}
	if p.l == nil {
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				r.ws, r.ok = ee.Sys().(syscall.WaitStatus), true
			}
		} else {
			r.ok = true
		}
		return r
	}
	r.ws, r.ok = p.l.Status()
	r.failure = p.l.Failure()
	if r.failure != "" {
		p.t.Fatalf("sandbox failed: %s (stderr %q)", r.failure, r.err)
	}
	return r
}

// run runs argv (sandboxed when s != nil) and waits for it.
func run(t testing.TB, s *Spec, argv ...string) result {
	t.Helper()
	return start(t, s, argv...).wait()
}

// sh runs a shell script.
func sh(t testing.TB, s *Spec, script string) result {
	t.Helper()
	return run(t, s, "/bin/sh", "-c", script)
}

func (r result) code() int {
	if !r.ok || !r.ws.Exited() {
		return -1
	}
	return r.ws.ExitStatus()
}

func (r result) String() string {
	return fmt.Sprintf("status %v ok=%v stdout %q stderr %q", r.ws, r.ok, strings.TrimSpace(r.out), strings.TrimSpace(r.err))
}

func TestIdentity(t *testing.T) {
	base := reachableDir(t)
	s := newSpec(t, base, "a")
	r := sh(t, &s, `id -u; id -g; hostname; grep -E '^Cap(Eff|Prm|Inh|Bnd|Amb)' /proc/self/status; pwd; ls /proc | grep -E '^[0-9]+$' | tr '\n' ' '`)
	t.Log(r)
	if r.code() != 0 {
		t.Fatal(r)
	}
}
