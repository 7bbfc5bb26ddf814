package runcg

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// v1Ctrls are the cgroup v1 controllers runcg uses: those limits need,
// and freezer, which stops a run's processes forking while they are
// killed one by one.
var v1Ctrls = []string{"memory", "pids", "cpu", "freezer"}

// v1Hiers finds the daemon's cgroups in the v1 hierarchies of v1Ctrls
// that are not on cgroup v2 (onV2) and that a run cgroup can be created
// in, and names the limit controllers it found nowhere.
func v1Hiers(onV2 map[string]bool) (hs []hier, missing []string) {
	paths := v1Paths()
	mounts := v1Mounts()
	seen := map[string]bool{}
	for _, c := range v1Ctrls {
		if onV2[c] {
			continue
		}
		dir := ""
		if path, ok := paths[c]; ok {
			for _, m := range mounts {
				if !m.has(c) {
					continue
				}
				if rel, ok := within(path, m.root); ok {
					dir = filepath.Join(m.dir, rel)
					break
				}
			}
		}
		if dir == "" || !writable(dir) {
			if c != "freezer" {
				missing = append(missing, c)
			}
			continue
		}
		if seen[dir] {
			continue // cpu,cpuacct and the like: one hierarchy, one dir
		}
		seen[dir] = true
		h := hier{dir: dir}
		for _, c2 := range v1Ctrls {
			if mountHas(mounts, dir, c2) {
				h.ctrls = append(h.ctrls, c2)
			}
		}
		hs = append(hs, h)
	}
	return hs, missing
}

// mountHas reports whether the v1 mount holding dir carries controller c.
func mountHas(mounts []v1Mount, dir, c string) bool {
	for _, m := range mounts {
		if m.has(c) && (dir == m.dir || strings.HasPrefix(dir, m.dir+"/")) {
			return true
		}
	}
	return false
}

// writable reports whether a run cgroup can be created in dir: it tries.
func writable(dir string) bool {
	probe := filepath.Join(dir, fmt.Sprintf("%s%d-probe-%d", prefix, os.Getpid(), probes.Add(1)))
	if err := os.Mkdir(probe, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return false
	}
	_ = os.Remove(probe)
	return true
}

// v1Paths maps each v1 controller to the caller's path in its hierarchy,
// from /proc/self/cgroup lines "N:memory:/path" ("N:cpu,cpuacct:/path").
func v1Paths() map[string]string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	paths := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || f[1] == "" {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			paths[c] = f[2]
		}
	}
	return paths
}

// v1Mount is a cgroup v1 mount: its root in the hierarchy (mountinfo's
// root field), mount point and options, controllers among them.
type v1Mount struct {
	root, dir string
	ctrls     []string
}

// has reports whether m carries controller c.
func (m v1Mount) has(c string) bool { return hier{ctrls: m.ctrls}.has(c) }

// v1Mounts lists the cgroup v1 mounts.
func v1Mounts() []v1Mount {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var ms []v1Mount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup ") {
			continue
		}
		fields, sup := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(sup) < 3 {
			continue
		}
		ms = append(ms, v1Mount{root: unescape(fields[3]), dir: unescape(fields[4]), ctrls: strings.Split(sup[2], ",")})
	}
	return ms
}

// procs lists the processes in cgroup dir.
func procs(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, s := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(s); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// killV1 SIGKILLs every process in the v1 cgroups dirs, named name, until
// none is left or the deadline passes. v1 has no cgroup.kill: the
// processes are listed and killed one by one, frozen first where freezer
// (the group's freezer cgroup) is set, so that none forks a child the list
// misses. The caller itself is spared: KillOwn kills it last.
func killV1(dirs []string, freezer, name string, deadline time.Time) error {
	self := os.Getpid()
	for {
		frozen := freezer != "" && freeze(freezer, deadline)
		left := 0
		seen := map[int]bool{}
		for _, dir := range dirs {
			pids, err := procs(dir)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("kill run cgroup: %w", err)
			}
			for _, pid := range pids {
				if pid == self || seen[pid] {
					continue
				}
				seen[pid] = true
				left++
				killMember(pid, name)
			}
		}
		if frozen {
			// The killed die as they thaw.
			_ = os.WriteFile(filepath.Join(freezer, "freezer.state"), []byte("THAWED"), 0)
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kill run cgroup %s: %d processes left", name, left)
		}
		// Killed processes leave the cgroup as they exit, a few at a time.
		time.Sleep(5 * time.Millisecond)
	}
}

// freeze freezes the freezer cgroup dir, waiting (until the deadline, and
// one second at most: a process in uninterruptible sleep holds it in
// FREEZING) until it is FROZEN.
func freeze(dir string, deadline time.Time) bool {
	state := filepath.Join(dir, "freezer.state")
	if os.WriteFile(state, []byte("FROZEN"), 0) != nil {
		return false
	}
	if d := time.Now().Add(time.Second); d.Before(deadline) {
		deadline = d
	}
	for {
		b, err := os.ReadFile(state)
		if err != nil {
			return true
		}
		if strings.TrimSpace(string(b)) == "FROZEN" || time.Now().After(deadline) {
			return true
		}
		time.Sleep(time.Millisecond)
	}
}

// killMember SIGKILLs pid if it is in a cgroup v1 named name. The pid was
// listed in the cgroup but may have exited and been reused since, so the
// process is pinned with a pidfd first and its membership checked after:
// the signal, sent through the pidfd, reaches only that process, and if
// it still lives when signalled it lived when /proc/<pid> was read. Where
// pidfds are missing (Linux < 5.3) the pid is signalled as it is.
func killMember(pid int, name string) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if errors.Is(err, syscall.ENOSYS) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return
	}
	defer unix.Close(fd)
	if !inV1(pid, name) {
		return
	}
	_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
}

// inV1 reports whether process pid is in a cgroup v1 named name.
func inV1(pid int, name string) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && f[1] != "" && filepath.Base(f[2]) == name {
			return true
		}
	}
	return false
}
