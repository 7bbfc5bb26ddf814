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

// seq numbers the run cgroups of this process, across all its Parents:
// several daemons in one process share one cgroup and one pid.
var seq atomic.Uint64

// staleAge is how old an empty run cgroup whose owner cannot be identified
// must be before a sweep removes it: younger, it may be one a live daemon
// has just created and not yet started its run in.
const staleAge = time.Minute

// owner identifies the process that created a run cgroup; it is encoded
// in the cgroup's name, "run-<pid>-<start>-<pidns>-<seq>". The pid alone
// is not enough: a restarted daemon can get its old pid back, and daemons
// in different pid namespaces share pids. The start time (clock ticks
// since boot, /proc/<pid>/stat field 22) tells a reused pid from the
// owner, and the pid namespace's inode tells whether the pid means the
// same process here at all.
type owner struct {
	pid   int
	start uint64
	pidns uint64
}

// self is the calling process as an owner.
func self() (owner, error) {
	pid := os.Getpid()
	start, err := startTime("self")
	if err != nil {
		return owner{}, err
	}
	fi, err := os.Stat("/proc/self/ns/pid")
	if err != nil {
		return owner{}, fmt.Errorf("%w: pid namespace: %v", ErrUnsupported, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return owner{}, fmt.Errorf("%w: pid namespace: no inode", ErrUnsupported)
	}
	return owner{pid: pid, start: start, pidns: st.Ino}, nil
}

// startTime reads a process's start time from /proc/<proc>/stat.
func startTime(proc string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", proc, "stat"))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold anything;
	// the fields after its last ')' start with field 3.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%s/stat: no command name", proc)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%s/stat: %d fields", proc, len(f)+2)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// name is the run cgroup name for sequence number n.
func (o owner) name(n uint64) string {
	return fmt.Sprintf("%s%d-%d-%d-%d", prefix, o.pid, o.start, o.pidns, n)
}

// parseOwner reads the owner from a run cgroup's name (prefix removed).
func parseOwner(rest string) (owner, bool) {
	f := strings.Split(rest, "-")
	if len(f) != 4 {
		return owner{}, false
	}
	var n [4]uint64
	for i, s := range f {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return owner{}, false
		}
		n[i] = v
	}
	if n[0] == 0 || n[0] > 1<<31 {
		return owner{}, false
	}
	return owner{pid: int(n[0]), start: n[1], pidns: n[2]}, true
}

// gone reports whether o provably no longer runs: it lived in the
// caller's pid namespace and its pid is free or now another process's
// (another start time). Unreadable is not gone.
func (o owner) gone(own owner) bool {
	if o.pidns != own.pidns {
		return false
	}
	if errors.Is(syscall.Kill(o.pid, 0), syscall.ESRCH) {
		return true
	}
	start, err := startTime(strconv.Itoa(o.pid))
	return err == nil && start != o.start
}

// KillOwn SIGKILLs every process in the caller's cgroup, itself included,
// when that is a run cgroup: how a run guard ends its whole run when its
// daemon cannot. Without a run cgroup v2 (a pure v1 host, DetectLimits),
// it kills the members of the caller's run cgroups v1 one by one, and
// then itself. It returns an error, and kills nothing, anywhere else.
func KillOwn() error {
	dir, err := ownDir()
	if err == nil && strings.HasPrefix(filepath.Base(dir), prefix) {
		return kill(dir)
	}
	dirs, name := ownV1Run()
	if len(dirs) == 0 {
		if err != nil {
			return err
		}
		return fmt.Errorf("%s is not a run cgroup", dir)
	}
	// No freezing: the caller would freeze itself.
	if err := killV1(dirs, "", name, time.Now().Add(emptyTimeout)); err != nil {
		return err
	}
	return syscall.Kill(os.Getpid(), syscall.SIGKILL)
}

// ownV1Run is the caller's run cgroups v1 and their name; none when it
// is in none.
func ownV1Run() ([]string, string) {
	paths, mounts := v1Paths(), v1Mounts()
	var dirs []string
	name := ""
	for _, c := range v1Ctrls {
		path, ok := paths[c]
		if !ok || !strings.HasPrefix(filepath.Base(path), prefix) {
			continue
		}
		for _, m := range mounts {
			if rel, ok := within(path, m.root); ok && m.has(c) {
				dirs = append(dirs, filepath.Join(m.dir, rel))
				name = filepath.Base(path)
				break
			}
		}
	}
	return dirs, name
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
