package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// InitArg is the argument that makes a binary run Init: its main (or a
// test binary's TestMain) calls Init when os.Args[1] == InitArg.
const InitArg = "sandbox-init"

// The init's inherited files.
const (
	specFD   = 3 // the wire, written by Started
	statusFD = 4 // "exit <wait status>" or "fail <reason>"
	extraFD  = 5 // the caller's ExtraFiles, the pipeline's 3, 4, …
)

// maxStatus bounds what Status reads of the status pipe.
const maxStatus = 4 << 10

// Launch is one prepared sandbox start.
type Launch struct {
	cmd     *exec.Cmd
	wire    []byte
	specR   *os.File // the init's fd 3
	specW   *os.File
	statusR *os.File
	statusW *os.File // the init's fd 4

	read    bool
	ws      syscall.WaitStatus
	ok      bool
	failure string
}

// Prepare rewrites cmd so that cmd.Start starts exe (the caller's binary,
// an absolute path; its main dispatches InitArg to Init) as the init of a
// sandbox described by s, and the init, once Started has handed it s,
// runs cmd's original Path, Args, Env and ExtraFiles as the pipeline in
// s.WorkDir. cmd.Dir is replaced by s.WorkDir. Stdin, Stdout and Stderr
// are kept (the pipeline inherits them), and so are the SysProcAttr
// fields about the process's place (Setpgid, Pgid, Setsid, Setctty,
// Noctty, Ctty, Foreground, Pdeathsig, UseCgroupFD, CgroupFD); a
// Credential or namespace flags of the caller's are refused: the sandbox
// decides them. The caller must call Close when done (after cmd.Wait),
// and Started right after a successful cmd.Start.
func Prepare(cmd *exec.Cmd, exe string, s Spec) (*Launch, error) {
	return prepare(cmd, exe, s, false)
}

func prepare(cmd *exec.Cmd, exe string, s Spec, probe bool) (*Launch, error) {
	if !filepath.IsAbs(exe) {
		return nil, fmt.Errorf("sandbox: init binary %q is not an absolute path", exe)
	}
	if cmd.Path == "" || !filepath.IsAbs(cmd.Path) {
		return nil, fmt.Errorf("sandbox: command %q is not an absolute path (exec.Command resolves it)", cmd.Path)
	}
	if cmd.Err != nil {
		return nil, fmt.Errorf("sandbox: %w", cmd.Err)
	}
	if cmd.Process != nil {
		return nil, errors.New("sandbox: command already started")
	}
	s, err := s.normalize()
	if err != nil {
		return nil, err
	}
	var sys syscall.SysProcAttr
	if old := cmd.SysProcAttr; old != nil {
		if old.Credential != nil || old.Cloneflags != 0 || old.Unshareflags != 0 || old.UidMappings != nil || old.GidMappings != nil || old.Chroot != "" || len(old.AmbientCaps) != 0 || old.Ptrace {
			return nil, errors.New("sandbox: the command's SysProcAttr sets credentials, namespaces, a chroot, capabilities or ptrace: the sandbox decides those")
		}
		sys = syscall.SysProcAttr{Setsid: old.Setsid, Setpgid: old.Setpgid, Pgid: old.Pgid, Setctty: old.Setctty,
			Noctty: old.Noctty, Ctty: old.Ctty, Foreground: old.Foreground, Pdeathsig: old.Pdeathsig,
			UseCgroupFD: old.UseCgroupFD, CgroupFD: old.CgroupFD}
	}
	args := cmd.Args
	if len(args) == 0 {
		args = []string{cmd.Path}
	}
	w := wire{Spec: s, Path: cmd.Path, Args: args, Env: cmd.Environ(), Extra: len(cmd.ExtraFiles), Probe: probe}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("sandbox: encode spec: %w", err)
	}
	if len(b) > maxSpecWire {
		return nil, fmt.Errorf("sandbox: spec, argv and environment take %d bytes, more than %d", len(b), maxSpecWire)
	}
	l := &Launch{cmd: cmd, wire: b}
	if l.specR, l.specW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("sandbox: spec pipe: %w", err)
	}
	if l.statusR, l.statusW, err = os.Pipe(); err != nil {
		l.Close()
		return nil, fmt.Errorf("sandbox: status pipe: %w", err)
	}

	sys.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
		syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWNET
	sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: int(s.UID), HostID: int(s.HostUID), Size: 1}}
	sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: int(s.GID), HostID: int(s.HostGID), Size: 1}}
	// A root daemon may let the init call setgroups, which Go then does
	// with an empty list: the daemon's supplementary groups (root's) must
	// not follow the run. An unprivileged daemon must deny setgroups to
	// map a gid at all, and its groups stay.
	sys.GidMappingsEnableSetgroups = os.Geteuid() == 0
	sys.Credential = &syscall.Credential{Uid: s.UID, Gid: s.GID, NoSetGroups: os.Geteuid() != 0}
	// The init is not root inside (uid s.UID), so it keeps only these
	// across its exec, as ambient capabilities: mounts and pivot_root,
	// bringing lo up, and emptying the bounding set before the pipeline.
	sys.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP}

	cmd.SysProcAttr = &sys
	cmd.ExtraFiles = append([]*os.File{l.specR, l.statusW}, cmd.ExtraFiles...)
	cmd.Path = exe
	cmd.Args = []string{exe, InitArg}
	cmd.Env = []string{} // the pipeline's is in the wire; nil would inherit ours
	cmd.Dir = "/"        // the init's cwd before it builds the root: any uid reaches /
	return l, nil
}

// Started hands the init its spec; call it right after cmd.Start
// succeeded. Before that the init waits, so the caller may place it
// first: Started writes the init's pid to <dir>/cgroup.procs for each
// dir in join before anything runs. When that fails, the init gets no
// spec and exits 125 without starting the pipeline; the error says why.
func (l *Launch) Started(join ...string) error {
	if l.cmd.Process == nil {
		return errors.New("sandbox: Started before cmd.Start")
	}
	// The init holds its own copies now; ours would keep the status pipe
	// from reaching EOF when it exits.
	_ = l.specR.Close()
	_ = l.statusW.Close()
	defer func() { _ = l.specW.Close() }()
	pid := strconv.Itoa(l.cmd.Process.Pid)
	for _, dir := range join {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(pid), 0); err != nil {
			return fmt.Errorf("sandbox: join cgroup: %w", err)
		}
	}
	// The init reads it whole at once; a pipe buffer may be smaller than
	// the spec, and the write then blocks until the init has read some.
	if _, err := l.specW.Write(l.wire); err != nil {
		return fmt.Errorf("sandbox: hand over spec: %w", err)
	}
	return nil
}

// Status returns the pipeline's own wait status; call it after cmd.Wait.
// The init is pid 1 of its namespace and cannot be killed by a signal of
// its own, so cmd's status is the init's: this is the pipeline's, as the
// init reported it. ok is false when the init never reported one: it was
// killed (SIGKILL from outside, the run's cgroup), or it failed before
// starting the pipeline (then Failure says why).
func (l *Launch) Status() (ws syscall.WaitStatus, ok bool) {
	l.readStatus()
	return l.ws, l.ok
}

// Failure is the init's reason for not starting the pipeline, e.g.
// "sandbox: mount proc: operation not permitted"; "" when it started it or
// never said. Call it after cmd.Wait.
func (l *Launch) Failure() string {
	l.readStatus()
	return l.failure
}

func (l *Launch) readStatus() {
	if l.read {
		return
	}
	l.read = true
	_ = l.statusW.Close() // when Started was never called
	b, _ := io.ReadAll(io.LimitReader(l.statusR, maxStatus))
	_ = l.statusR.Close()
	msg := strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
	switch {
	case strings.HasPrefix(msg, "exit "):
		n, err := strconv.ParseUint(strings.TrimPrefix(msg, "exit "), 10, 32)
		if err == nil {
			l.ws, l.ok = syscall.WaitStatus(n), true
		}
	case strings.HasPrefix(msg, "fail "):
		l.failure = strings.TrimPrefix(msg, "fail ")
	}
}

// Close releases the pipes. It does not stop the init: that is cmd's.
func (l *Launch) Close() {
	for _, f := range []*os.File{l.specR, l.specW, l.statusR, l.statusW} {
		if f != nil {
			_ = f.Close()
		}
	}
}
