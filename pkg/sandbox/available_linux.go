package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// probeTimeout bounds Available's probe sandbox; it normally takes a few
// milliseconds.
const probeTimeout = 10 * time.Second

// Available reports whether this process can start sandboxes with exe as
// the init, by starting a probe sandbox that sets everything up (user
// namespace, mounts, /proc, pivot_root, lo, dropping capabilities) and
// starts nothing. The error names what is missing and how to allow it.
func Available(exe string) error {
	if v := sysctl("user/max_user_namespaces"); v == "0" {
		return errors.New("sandbox: user namespaces are disabled: sysctl user.max_user_namespaces is 0; set it above 0")
	}
	if os.Geteuid() != 0 && sysctl("kernel/unprivileged_userns_clone") == "0" {
		return errors.New("sandbox: unprivileged user namespaces are disabled: sysctl kernel.unprivileged_userns_clone=1, or run the daemon as root")
	}
	s := Spec{HostUID: uint32(os.Getuid()), HostGID: uint32(os.Getgid()), ReadOnly: DefaultReadOnly()}
	if os.Geteuid() == 0 {
		l, err := LeaseUID(DefaultRange, "sandbox-probe")
		if err != nil {
			return err
		}
		defer l.Release()
		s.HostUID, s.HostGID = l.UID(), l.UID()
	}
	dir, err := os.MkdirTemp("", "agentsmithd-sandbox-probe-")
	if err != nil {
		return fmt.Errorf("sandbox: probe: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chown(dir, int(s.HostUID), int(s.HostGID)); err != nil && os.Geteuid() == 0 {
		return fmt.Errorf("sandbox: probe: %w", err)
	}
	s.WorkDir = dir

	cmd := exec.Command(exe)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	l, err := prepare(cmd, exe, s, true)
	if err != nil {
		return err
	}
	defer l.Close()
	if err := cmd.Start(); err != nil {
		return startError(err)
	}
	timer := time.AfterFunc(probeTimeout, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	if err := l.Started(); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	werr := cmd.Wait()
	if ws, ok := l.Status(); ok && ws.Exited() && ws.ExitStatus() == 0 {
		return nil
	}
	if f := l.Failure(); f != "" {
		return setupError(f)
	}
	return fmt.Errorf("sandbox: the probe sandbox did not report (%v; stderr %q): does %s dispatch %q to sandbox.Init?",
		werr, strings.TrimSpace(stderr.String()), exe, InitArg)
}

func sysctl(name string) string {
	b, err := os.ReadFile("/proc/sys/" + name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// startError explains why the kernel refused to start the init.
func startError(err error) error {
	switch {
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		hint := "a seccomp profile or LSM forbids clone(CLONE_NEWUSER|…): run the container with --security-opt seccomp=unconfined (or a profile allowing namespace creation)"
		if sysctl("kernel/apparmor_restrict_unprivileged_userns") == "1" {
			hint = "AppArmor restricts unprivileged user namespaces: sysctl kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile with the userns permission for the daemon"
		}
		return fmt.Errorf("sandbox: cannot create the run's namespaces (%v): %s", err, hint)
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("sandbox: cannot create a user namespace (%v): user.max_user_namespaces is reached; raise it", err)
	case errors.Is(err, syscall.EINVAL):
		return fmt.Errorf("sandbox: cannot create the run's namespaces (%v): the kernel lacks user, pid, net, ipc or uts namespaces (CONFIG_*_NS)", err)
	}
	return fmt.Errorf("sandbox: start the init: %w", err)
}

// setupError adds a fix to a failure of the probe's setup.
func setupError(f string) error {
	switch {
	case strings.Contains(f, "mount proc"):
		return fmt.Errorf("%s: a fresh /proc may only be mounted where the host's /proc is fully visible; a container runtime's masked /proc paths forbid it (docker: --security-opt systempaths=unconfined)", f)
	case strings.Contains(f, "function not implemented"):
		return fmt.Errorf("%s: the sandbox needs Linux 5.12 or later (open_tree, move_mount, mount_setattr, openat2)", f)
	case strings.Contains(f, "operation not permitted"):
		return fmt.Errorf("%s: the run's user namespace may not mount here (a seccomp profile or LSM forbids mount/pivot_root)", f)
	}
	return errors.New(f)
}
