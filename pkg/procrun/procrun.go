// Package procrun runs one pipeline command in its own process group and
// guarantees that, when Run returns, nothing started by the command is left
// running in that group and no goroutine still touches the caller's writers.
//
// The group matters because pipelines are shell scripts that start other
// programs: signalling only the direct child would leave its children
// running (and holding the output pipe) after a timeout or shutdown. A
// process can leave its group (setsid); with Spec.Cgroups the command also
// runs in a cgroup of its own (pkg/runcg), which nothing can leave, and
// nothing the command started survives Run at all.
package procrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/runcg"
	"github.com/agentsmithd/agentsmithd/pkg/sandbox"
)

// Defaults for zero Spec fields.
const (
	DefaultGrace     = 10 * time.Second
	DefaultTailBytes = 4096
)

// drainTimeout bounds how long Run waits for the output pipe to close after
// the group was killed. Only a descendant that left the group (setsid) can
// keep it open that long; Run then closes the pipe and returns anyway.
const drainTimeout = 2 * time.Second

// Spec describes one command run.
type Spec struct {
	Argv []string
	// Env is the complete environment. Nothing is inherited from the daemon:
	// a nil Env runs the command with an empty environment. A bare Argv[0]
	// is looked up in Env's PATH, or in the daemon's PATH when Env has none.
	Env []string
	// Dir is the working directory; the caller creates it.
	Dir   string
	Stdin []byte
	// Timeout bounds the run; 0 means none.
	Timeout time.Duration
	// Grace is the SIGTERM → SIGKILL delay on timeout or ctx cancellation.
	// 0 means DefaultGrace; negative means SIGKILL at once.
	Grace time.Duration
	// TailBytes of combined stdout+stderr are kept in Result.Tail; 0 or less
	// means DefaultTailBytes.
	TailBytes int
	// Output, if set, receives the full combined output as it is produced.
	// It is only written from within Run.
	Output io.Writer
	// Kill, when closed, SIGKILLs the group at once without grace: the
	// caller lost ownership of the run and must not let it act any longer.
	Kill <-chan struct{}
	// Credential, when set, runs the command as that user and group (the
	// daemon must be root or hold CAP_SETUID/CAP_SETGID): a pipeline under
	// another uid cannot read the daemon's files or signal it. nil runs it
	// as the daemon's own user.
	Credential *syscall.Credential
	// ExtraFiles are inherited by the command as fds 3, 4, …: how the
	// daemon hands a run guard (lifecycle/runguard) its orders without
	// putting them in the command line or the environment. The caller
	// closes them after Run returns.
	ExtraFiles []*os.File
	// Cgroups, when set, runs the command in a cgroup of its own created
	// there (pkg/runcg) and kills that cgroup when Run returns: every
	// process the command started ends with the run, including those that
	// left its process group (setsid, a double fork). nil leaves the
	// process group as the only bound.
	Cgroups *runcg.Parent
	// Limits bound the run's cgroup (with Cgroups): memory, processes and
	// CPU. A run a limit ended says which in Result.LimitHit.
	Limits runcg.Limits
	// Sandbox, when set, runs the command in a sandbox of its own
	// (pkg/sandbox): SandboxExe (an absolute path; its main runs
	// sandbox.Init for sandbox.InitArg) is started as the sandbox's init,
	// which runs the command inside. The Credential field must then be nil.
	Sandbox    *sandbox.Spec
	SandboxExe string
	// Started, when set, is called once the command has started and
	// joined every cgroup of its run, before Run waits for it: a caller
	// that hands the command its orders later (a run guard's) does it
	// from here, so the command starts nothing outside its cgroups.
	Started func()
}

// Result is what happened to a run.
type Result struct {
	ExitCode int    // -1 when killed by a signal or not started
	Signal   string // the terminating signal ("killed", "terminated"); "" if exited
	Duration time.Duration
	TimedOut bool   // Spec.Timeout fired
	Canceled bool   // ctx was cancelled (shutdown)
	Killed   bool   // Spec.Kill was closed
	Tail     []byte // last TailBytes of output, starting at a rune boundary
	Err      error  // start failure, nil otherwise
	// Leftover is set when the run's cgroup could not be killed or
	// removed: processes of the run may still exist.
	Leftover error
	// LimitHit names the limit of Spec.Limits that ended part of the run
	// ("memory limit 4 GiB reached"), "" when none did.
	LimitHit string

	timeout time.Duration // for Describe
}

// OK reports whether the command ran and exited 0 on its own.
func (r Result) OK() bool {
	return r.Err == nil && r.ExitCode == 0 && r.Signal == "" && !r.TimedOut && !r.Canceled && !r.Killed
}

// Describe is a one-line account of the outcome for logs and ticket comments,
// e.g. "exit status 3" or "killed by signal terminated after timeout 2s".
func (r Result) Describe() string {
	if r.Err != nil {
		return "failed to start: " + r.Err.Error()
	}
	var b strings.Builder
	if r.Signal != "" {
		b.WriteString("killed by signal " + r.Signal)
	} else {
		fmt.Fprintf(&b, "exit status %d", r.ExitCode)
	}
	if r.TimedOut {
		b.WriteString(" after timeout")
		if r.timeout > 0 {
			b.WriteString(" " + r.timeout.String())
		}
	}
	if r.Canceled {
		b.WriteString(" on shutdown")
	}
	if r.Killed {
		b.WriteString(" on kill request")
	}
	if r.LimitHit != "" {
		b.WriteString(" (" + r.LimitHit + ")")
	}
	return b.String()
}

// Run starts spec.Argv in a new process group and waits for it. On timeout
// or ctx cancellation the group gets SIGTERM, then SIGKILL after Grace;
// closing spec.Kill sends SIGKILL at once. When the group leader exits, the
// rest of its group is killed too, so background children cannot outlive
// the run or keep Run from returning; with spec.Cgroups, so is the rest of
// its cgroup.
func Run(ctx context.Context, spec Spec) Result {
	start := time.Now()
	res := Result{ExitCode: -1, timeout: spec.Timeout}
	fail := func(err error) Result {
		res.Err = err
		res.Duration = time.Since(start)
		return res
	}
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return fail(errors.New("empty command"))
	}
	if err := ctx.Err(); err != nil {
		res.Canceled = true
		return fail(fmt.Errorf("not started: %w", err))
	}
	select {
	case <-spec.Kill:
		res.Killed = true
		return fail(errors.New("not started: kill requested"))
	default:
	}

	path, err := LookPath(spec.Argv[0], spec.Env)
	if err != nil {
		return fail(err)
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(spec.Dir, path)
	}
	env := spec.Env
	if env == nil {
		env = []string{} // a nil Env would make os/exec inherit os.Environ
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        spec.Argv,
		Env:         env,
		Dir:         spec.Dir,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Credential: spec.Credential},
		ExtraFiles:  spec.ExtraFiles,
	}
	var cg *runcg.Group
	if spec.Cgroups != nil {
		if spec.Limits.IsZero() {
			cg, err = spec.Cgroups.New()
		} else {
			cg, err = spec.Cgroups.NewLimited(spec.Limits)
		}
		if err != nil {
			return fail(err)
		}
		startIn(cmd.SysProcAttr, cg)
	}
	var box *sandbox.Launch
	// failStart releases the cgroup, and with it its directory and fd, on
	// every way out before the command runs.
	failStart := func(err error) Result {
		if box != nil {
			box.Close()
		}
		if cg != nil {
			res.Leftover = cg.Close()
		}
		return fail(err)
	}
	if spec.Sandbox != nil {
		if spec.Credential != nil {
			return failStart(errors.New("a sandboxed command takes its user from the sandbox, not a credential"))
		}
		// The init dies with the daemon when no guard is between them,
		// and the whole sandbox with it (PID 1 of its namespace): its
		// uid lease is the daemon's and goes with it.
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
		if box, err = sandbox.Prepare(cmd, spec.SandboxExe, *spec.Sandbox); err != nil {
			return failStart(err)
		}
		defer box.Close()
	}

	// The pipes are ours rather than os/exec's so that we decide when to
	// stop reading: after the group is dead, not when every holder of the
	// pipe has gone.
	outR, outW, err := os.Pipe()
	if err != nil {
		return failStart(fmt.Errorf("output pipe: %w", err))
	}
	cmd.Stdout, cmd.Stderr = outW, outW
	var inR, inW *os.File
	if len(spec.Stdin) > 0 {
		if inR, inW, err = os.Pipe(); err != nil {
			outR.Close()
			outW.Close()
			return failStart(fmt.Errorf("stdin pipe: %w", err))
		}
		cmd.Stdin = inR
	}
	err = cmd.Start()
	outW.Close()
	if inR != nil {
		inR.Close()
	}
	if err != nil {
		outR.Close()
		if inW != nil {
			inW.Close()
		}
		return failStart(fmt.Errorf("start %s: %w", spec.Argv[0], err))
	}
	pgid := cmd.Process.Pid
	// kill ends the group at once, and the cgroup with every process that
	// left the group.
	kill := func() {
		signalGroup(pgid, syscall.SIGKILL)
		if cg != nil {
			_ = cg.Kill()
		}
	}
	// The v1 cgroups (hybrid hosts) are joined by pid: clone3 placed the
	// command in the v2 one only. A sandbox's init, or a guard waiting
	// for its orders, has started nothing yet; a bare command may have
	// forked already, which is why limits on v1 hold fully only for
	// guarded or sandboxed runs.
	if err := placed(cmd.Process.Pid, cg, box); err != nil {
		kill()
		outR.Close()
		if inW != nil {
			inW.Close()
		}
		_, _ = cmd.Process.Wait()
		return failStart(err)
	}
	if spec.Started != nil {
		spec.Started()
	}

	size := spec.TailBytes
	if size <= 0 {
		size = DefaultTailBytes
	}
	tl := newTail(size)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		copyOutput(outR, tl, spec.Output)
	}()
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		if inW != nil {
			_, _ = inW.Write(spec.Stdin) // EPIPE when the command ignores stdin
			inW.Close()
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	grace := spec.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	var timeoutC, graceC <-chan time.Time
	if spec.Timeout > 0 {
		t := time.NewTimer(spec.Timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	terminating := false
	terminate := func() {
		if terminating {
			return
		}
		terminating = true
		if grace < 0 {
			kill()
			return
		}
		signalGroup(pgid, syscall.SIGTERM)
		t := time.NewTimer(grace)
		graceC = t.C
	}
	ctxDone, killC := ctx.Done(), spec.Kill
	var waitErr error
wait:
	for {
		select {
		case waitErr = <-exited:
			break wait
		case <-timeoutC:
			timeoutC = nil
			res.TimedOut = true
			terminate()
		case <-ctxDone:
			ctxDone = nil
			res.Canceled = true
			terminate()
		case <-killC:
			killC = nil
			res.Killed = true
			kill()
		case <-graceC:
			graceC = nil
			kill()
		}
	}
	// The leader is gone; whatever it left behind in its group goes too,
	// and with a cgroup whatever left the group.
	signalGroup(pgid, syscall.SIGKILL)
	if cg != nil {
		res.LimitHit = cg.LimitHit()
		res.Leftover = cg.Close()
	}

	drain := time.NewTimer(drainTimeout)
	select {
	case <-copied:
	case <-drain.C:
	}
	drain.Stop()
	outR.Close() // unblocks the reader if an escaped process holds the pipe
	<-copied
	if inW != nil {
		inW.Close() // likewise for a writer blocked on a full stdin pipe
	}
	<-fed

	res.Tail = tl.Bytes()
	res.Duration = time.Since(start)
	if box != nil {
		// The init reports the pipeline's own status: as PID 1 of its
		// namespace it cannot die by a signal of its own.
		if ws, ok := box.Status(); ok {
			setStatus(&res, ws)
			return res
		}
		if why := box.Failure(); why != "" && !res.Killed && !res.Canceled && !res.TimedOut {
			res.Err = errors.New(why)
			return res
		}
	}
	if ws, ok := waitStatus(cmd); ok {
		setStatus(&res, ws)
	} else if waitErr != nil {
		res.Err = fmt.Errorf("wait %s: %w", spec.Argv[0], waitErr)
	}
	return res
}

// placed joins the started command to its run's v1 cgroups and hands a
// sandbox's init its spec.
func placed(pid int, cg *runcg.Group, box *sandbox.Launch) error {
	if cg != nil {
		if err := cg.Join(pid); err != nil {
			return fmt.Errorf("join the run's cgroups: %w", err)
		}
	}
	if box != nil {
		if err := box.Started(); err != nil {
			return err
		}
	}
	return nil
}

// setStatus records how the command ended.
func setStatus(res *Result, ws syscall.WaitStatus) {
	if ws.Signaled() {
		res.Signal = ws.Signal().String()
	} else {
		res.ExitCode = ws.ExitStatus()
	}
}

func waitStatus(cmd *exec.Cmd) (syscall.WaitStatus, bool) {
	if cmd.ProcessState == nil {
		return 0, false
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ws, ok
}

// signalGroup signals every process in the group. ESRCH (group already
// empty) is the expected outcome after a clean exit and is ignored.
func signalGroup(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
}

// copyOutput feeds the tail and, until it first fails, the caller's writer.
func copyOutput(r io.Reader, tl *tail, w io.Writer) {
	buf := make([]byte, 32*1024)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			tl.Write(buf[:n])
			if w != nil {
				if _, werr := w.Write(buf[:n]); werr != nil {
					w = nil
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// LookPath resolves a bare command name in the PATH the command will see
// (env's), falling back to the daemon's PATH; names with a slash are used as
// given (relative ones relative to Spec.Dir). Run calls it; a run guard
// calls it to start the pipeline exactly as Run would have.
func LookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for i := len(env) - 1; i >= 0; i-- {
		dirs, ok := strings.CutPrefix(env[i], "PATH=")
		if !ok {
			continue
		}
		for _, dir := range filepath.SplitList(dirs) {
			if dir == "" || !filepath.IsAbs(dir) {
				continue
			}
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
		return "", fmt.Errorf("%s: %w in the command's PATH", name, exec.ErrNotFound)
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("look up %s: %w", name, err)
	}
	return p, nil
}
