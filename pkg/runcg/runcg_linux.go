package runcg

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// prefix starts the name of every run cgroup; KillOwn refuses any other
// cgroup, so a process outside a run cgroup never kills its own.
const prefix = "run-"

// probes numbers Detect's probe cgroups: several daemons in one process
// (tests, the demo) detect at once.
var probes atomic.Uint64

// Parent is the cgroup run cgroups are created in: the daemon's own.
type Parent struct {
	dir string
	seq atomic.Uint64
}

// Detect finds the calling process's cgroup v2 and checks that a run
// cgroup can be created in it and killed with cgroup.kill. The error says
// why not (the daemon logs it and falls back).
func Detect() (*Parent, error) {
	dir, err := ownDir()
	if err != nil {
		return nil, err
	}
	p := &Parent{dir: dir}
	probe := filepath.Join(dir, fmt.Sprintf("%s%d-probe-%d", prefix, os.Getpid(), probes.Add(1)))
	if err := os.Mkdir(probe, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("create a cgroup in %s (needs write access: systemd Delegate=yes): %w", dir, err)
	}
	defer os.Remove(probe)
	if _, err := os.Stat(filepath.Join(probe, "cgroup.kill")); err != nil {
		return nil, fmt.Errorf("cgroup.kill (Linux 5.14): %w", err)
	}
	p.sweep()
	return p, nil
}

// sweep kills and removes the run cgroups of daemons that are gone (killed
// -9, crashed): their runs have no owner left, and whatever those runs
// started must not keep running. A cgroup whose daemon's pid is alive, or
// reused, is left alone.
func (p *Parent) sweep() {
	ents, _ := os.ReadDir(p.dir)
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid <= 0 || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		g := &Group{dir: filepath.Join(p.dir, e.Name())}
		_ = g.remove()
	}
}

// Dir is where run cgroups are created.
func (p *Parent) Dir() string { return p.dir }

// Group is one run's cgroup.
type Group struct {
	dir string
	fd  *os.File
}

// New creates a run cgroup. Start the run's first process in it with
// FD (SysProcAttr.UseCgroupFD: clone3 CLONE_INTO_CGROUP, so there is no
// moment at which the process runs outside it), and Close it when the run
// is over.
func (p *Parent) New() (*Group, error) {
	dir := filepath.Join(p.dir, fmt.Sprintf("%s%d-%d", prefix, os.Getpid(), p.seq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create run cgroup: %w", err)
	}
	fd, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("open run cgroup: %w", err)
	}
	return &Group{dir: dir, fd: fd}, nil
}

// Dir is the group's directory.
func (g *Group) Dir() string { return g.dir }

// FD is the group's directory fd, for SysProcAttr.CgroupFD.
func (g *Group) FD() int { return int(g.fd.Fd()) }

// Kill SIGKILLs every process in the group, at once.
func (g *Group) Kill() error { return kill(g.dir) }

// Close kills what is left in the group, waits until it is empty and
// removes it.
func (g *Group) Close() error {
	defer g.fd.Close()
	return g.remove()
}

// remove kills the group, waits until it is empty and removes it.
func (g *Group) remove() error {
	if err := g.Kill(); err != nil {
		return err
	}
	deadline := time.Now().Add(emptyTimeout)
	for {
		err := os.Remove(g.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("remove run cgroup: %w", err)
		}
		// Killed processes leave the cgroup as they exit, a few at a time.
		time.Sleep(5 * time.Millisecond)
	}
}

// Populated reports whether a process of the group still runs.
func (g *Group) Populated() (bool, error) {
	b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.events"))
	if err != nil {
		return false, err
	}
	return bytes.Contains(b, []byte("populated 1")), nil
}

// KillOwn SIGKILLs every process in the caller's cgroup, itself included,
// when that is a run cgroup: how a run guard ends its whole run when its
// daemon cannot. It returns an error, and kills nothing, anywhere else.
func KillOwn() error {
	dir, err := ownDir()
	if err != nil {
		return err
	}
	if !strings.HasPrefix(filepath.Base(dir), prefix) {
		return fmt.Errorf("%s is not a run cgroup", dir)
	}
	return kill(dir)
}

func kill(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		return fmt.Errorf("kill run cgroup: %w", err)
	}
	return nil
}

// ownDir is the calling process's cgroup v2 directory: its path in
// /proc/self/cgroup ("0::/path") below the cgroup2 mount whose root holds it.
func ownDir() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	var path string
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			path, found = p, true
		}
	}
	if !found {
		return "", fmt.Errorf("%w: no cgroup2 entry in /proc/self/cgroup", ErrUnsupported)
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		line := sc.Text()
		pre, post, ok := strings.Cut(line, " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		fields := strings.Fields(pre)
		if len(fields) < 5 {
			continue
		}
		root, mnt := unescape(fields[3]), unescape(fields[4])
		rel, ok := within(path, root)
		if !ok {
			continue
		}
		return filepath.Join(mnt, rel), nil
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	return "", fmt.Errorf("%w: no cgroup2 mount holds %s", ErrUnsupported, path)
}

// within returns path relative to root when root holds it.
func within(path, root string) (string, bool) {
	if root == "/" {
		return path, true
	}
	if path == root {
		return "/", true
	}
	rel, ok := strings.CutPrefix(path, root+"/")
	if !ok {
		return "", false
	}
	return "/" + rel, true
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
