package runcg

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Group is one run's cgroups: a cgroup v2 (where the daemon has one) and
// one in each v1 hierarchy the Parent uses for limits or freezing. Kill
// may be called from any goroutine; Close and LimitHit from the one that
// owns the run.
type Group struct {
	name string
	// dir is the run cgroup v2, fd its directory; "" and nil without.
	dir string
	fd  *os.File
	// v1 are the run's cgroups v1, freezer the one of them in the freezer
	// hierarchy ("" without).
	v1      []string
	freezer string
	limits  Limits
	// mem and pids are where the memory and pids controllers count the
	// run's limit hits.
	mem, pids ctlDir
	// hit is LimitHit as Close found it, before the cgroups went.
	hit    string
	closed bool
}

// ctlDir is a run cgroup with one controller, v1 or v2; dir "" is none.
type ctlDir struct {
	dir string
	v1  bool
}

// New creates a run cgroup without limits. Start the run's first process
// in it with FD (SysProcAttr.UseCgroupFD: clone3 CLONE_INTO_CGROUP, so
// there is no moment at which the process runs outside it), and Close it
// when the run is over. Where the Parent has no cgroup v2 (DetectLimits
// on a v1 host), it is NewLimited(Limits{}).
func (p *Parent) New() (*Group, error) {
	if p.dir == "" {
		return p.NewLimited(Limits{})
	}
	return p.create(false)
}

// NewLimited creates a run cgroup, as New, that enforces l: memory.max
// (and memory.swap.max 0, so swap is no way around it), pids.max and
// cpu.max on cgroup v2; memory.limit_in_bytes (and memsw likewise),
// pids.max and the CFS quota on v1. It fails, creating nothing, when a
// limit of l has no controller (Parent.Missing). Where JoinDirs is not
// empty, the run's first process must also Join them before it starts
// anything: FD puts it in the cgroup v2 only.
func (p *Parent) NewLimited(l Limits) (*Group, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if err := p.Missing(l); err != nil {
		return nil, err
	}
	g, err := p.create(true)
	if err != nil {
		return nil, err
	}
	g.limits = l
	if dir, v1, ok := p.ctrl("memory"); ok {
		g.mem = g.ctlDir(dir, v1)
	}
	if dir, v1, ok := p.ctrl("pids"); ok {
		g.pids = g.ctlDir(dir, v1)
	}
	if err := g.apply(p); err != nil {
		_ = g.Close()
		return nil, err
	}
	return g, nil
}

// ctlDir is g's cgroup below the parent dir.
func (g *Group) ctlDir(parent string, v1 bool) ctlDir {
	return ctlDir{dir: filepath.Join(parent, g.name), v1: v1}
}

// create makes the run's cgroups: v2 if the Parent has it, and with v1
// the run's cgroups in every v1 hierarchy, all with one name.
func (p *Parent) create(v1 bool) (*Group, error) {
	var parents []string
	if p.dir != "" {
		parents = append(parents, p.dir)
	}
	if v1 {
		for _, h := range p.v1 {
			parents = append(parents, h.dir)
		}
	}
	for tries := 0; ; tries++ {
		name := p.own.name(seq.Add(1))
		var made []string
		var err error
		for _, parent := range parents {
			dir := filepath.Join(parent, name)
			if err = os.Mkdir(dir, 0o755); err != nil {
				break
			}
			made = append(made, dir)
		}
		if err == nil {
			g := &Group{name: name}
			for i, dir := range made {
				if i == 0 && p.dir != "" {
					g.dir = dir
					continue
				}
				g.v1 = append(g.v1, dir)
				if p.v1[len(g.v1)-1].has("freezer") {
					g.freezer = dir
				}
			}
			if g.dir != "" {
				fd, err := os.OpenFile(g.dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
				if err != nil {
					_ = g.rmdirs()
					return nil, fmt.Errorf("open run cgroup: %w", err)
				}
				g.fd = fd
			}
			return g, nil
		}
		for _, dir := range made {
			_ = os.Remove(dir)
		}
		// A name can be taken only by a cgroup left by an earlier process
		// with this pid and start time: in another pid namespace, or
		// somebody else's making. Take the next.
		if !errors.Is(err, os.ErrExist) || tries == 100 {
			return nil, fmt.Errorf("create run cgroup: %w", err)
		}
	}
}

// apply writes g's limits to its cgroups.
func (g *Group) apply(p *Parent) error {
	l := g.limits
	var files [][2]string // path, value: in order
	if l.MemoryBytes > 0 {
		n := strconv.FormatInt(l.MemoryBytes, 10)
		if g.mem.v1 {
			files = append(files, [2]string{"memory.limit_in_bytes", n}, [2]string{"?memory.memsw.limit_in_bytes", n})
		} else {
			files = append(files, [2]string{"memory.max", n}, [2]string{"?memory.swap.max", "0"})
		}
	}
	var ctl []ctlDir
	for range files {
		ctl = append(ctl, g.mem)
	}
	if l.Pids > 0 {
		files = append(files, [2]string{"pids.max", strconv.FormatInt(l.Pids, 10)})
		ctl = append(ctl, g.pids)
	}
	if l.CPU > 0 {
		dir, v1, _ := p.ctrl("cpu")
		c := g.ctlDir(dir, v1)
		q := strconv.FormatInt(cpuQuota(l.CPU), 10)
		if v1 {
			files = append(files, [2]string{"cpu.cfs_period_us", strconv.Itoa(cpuPeriod)}, [2]string{"cpu.cfs_quota_us", q})
			ctl = append(ctl, c, c)
		} else {
			files = append(files, [2]string{"cpu.max", q + " " + strconv.Itoa(cpuPeriod)})
			ctl = append(ctl, c)
		}
	}
	for i, f := range files {
		name, optional := strings.CutPrefix(f[0], "?")
		path := filepath.Join(ctl[i].dir, name)
		if optional {
			// memsw exists only with swap accounting, swap.max only with
			// swap support: without, there is no swap to get around by.
			if _, err := os.Stat(path); err != nil {
				continue
			}
		}
		if err := os.WriteFile(path, []byte(f[1]), 0); err != nil {
			return fmt.Errorf("set run limit: %w", err)
		}
	}
	return nil
}

// Dir is the group's cgroup v2 directory; "" without one.
func (g *Group) Dir() string { return g.dir }

// FD is the group's cgroup v2 directory fd, for SysProcAttr.CgroupFD; -1
// without one.
func (g *Group) FD() int {
	if g.fd == nil {
		return -1
	}
	return int(g.fd.Fd())
}

// JoinDirs are the group's cgroups v1, which a process joins by writing
// its pid to their cgroup.procs (Join): clone3 CLONE_INTO_CGROUP covers
// cgroup v2 only. The run's first process must be in them before it
// starts anything, so that every process of the run is.
func (g *Group) JoinDirs() []string { return append([]string(nil), g.v1...) }

// Join puts process pid (0: the caller) in the group's cgroups v1.
func (g *Group) Join(pid int) error { return Join(g.v1, pid) }

// Join puts process pid (0: the caller) in the cgroups v1 dirs (from
// Group.JoinDirs): how a run guard or sandbox init in another process
// joins its run's cgroups before it starts the pipeline.
func Join(dirs []string, pid int) error {
	if pid == 0 {
		pid = os.Getpid()
	}
	for _, dir := range dirs {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("join run cgroup: %w", err)
		}
	}
	return nil
}

// Kill SIGKILLs every process in the group: at once in cgroup v2
// (cgroup.kill); in v1, which has no cgroup.kill, each member, frozen
// first where the freezer is there so that none forks meanwhile, until
// none is left or emptyTimeout passes.
func (g *Group) Kill() error {
	var errs []error
	if g.dir != "" {
		errs = append(errs, kill(g.dir))
	}
	if len(g.v1) > 0 {
		errs = append(errs, killV1(g.v1, g.freezer, g.name, time.Now().Add(emptyTimeout)))
	}
	return errors.Join(errs...)
}

// Close kills what is left in the group, waits until it is empty and
// removes it. LimitHit still answers after it.
func (g *Group) Close() error {
	if !g.closed {
		g.hit = g.limitHit()
		g.closed = true
	}
	if g.fd != nil {
		defer g.fd.Close()
	}
	return g.remove()
}

// remove kills the group, waits until it is empty and removes it.
func (g *Group) remove() error {
	if err := g.Kill(); err != nil {
		return err
	}
	return g.rmdirs()
}

// rmdirs removes the group's cgroups, waiting for each to empty.
func (g *Group) rmdirs() error {
	deadline := time.Now().Add(emptyTimeout)
	for _, dir := range append([]string{g.dir}, g.v1...) {
		if dir == "" {
			continue
		}
		for {
			err := os.Remove(dir)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
				return fmt.Errorf("remove run cgroup: %w", err)
			}
			// Killed processes leave the cgroup as they exit, a few at a time.
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}

// Populated reports whether a process of the group still runs.
func (g *Group) Populated() (bool, error) {
	if g.dir != "" {
		b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.events"))
		if err != nil {
			return false, err
		}
		if bytes.Contains(b, []byte("populated 1")) {
			return true, nil
		}
	}
	for _, dir := range g.v1 {
		pids, err := procs(dir)
		if err != nil {
			return false, err
		}
		if len(pids) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// LimitHit says which of the group's limits the run reached in a way that
// ended or failed some of it: "memory limit 4 GiB reached" when the
// memory controller OOM-killed a process (or, on v1 kernels before 4.13
// that do not count OOM kills, failed a charge), "process limit 512
// reached" when a fork failed at pids.max; both, joined by "; ", or "".
// A CPU limit only throttles, so it is never a reason. It answers from
// what Close saw once the group is closed.
func (g *Group) LimitHit() string {
	if g.closed {
		return g.hit
	}
	return g.limitHit()
}

func (g *Group) limitHit() string {
	var why []string
	if g.limits.MemoryBytes > 0 && g.mem.dir != "" && memHit(g.mem) {
		why = append(why, fmt.Sprintf("memory limit %s reached", FormatBytes(g.limits.MemoryBytes)))
	}
	if g.limits.Pids > 0 && g.pids.dir != "" && counter(filepath.Join(g.pids.dir, "pids.events"), "max") > 0 {
		why = append(why, fmt.Sprintf("process limit %d reached", g.limits.Pids))
	}
	return strings.Join(why, "; ")
}

// memHit reports whether the memory controller of c OOM-killed. v2
// memory.events "oom" counts charges that reached the limit after reclaim
// and would fail, "oom_kill" the kills; "max" alone is not used, as it
// counts every time reclaim ran at the limit, page cache of a large
// checkout included, which ends nothing. v1 memory.oom_control counts
// oom_kill since Linux 4.13; before, a failed charge (failcnt) is the
// best sign there is.
func memHit(c ctlDir) bool {
	if !c.v1 {
		f := filepath.Join(c.dir, "memory.events")
		return counter(f, "oom_kill") > 0 || counter(f, "oom") > 0
	}
	f := filepath.Join(c.dir, "memory.oom_control")
	if n := counter(f, "oom_kill"); n >= 0 {
		return n > 0 || counter(f, "under_oom") > 0
	}
	return counter(filepath.Join(c.dir, "memory.failcnt"), "") > 0 ||
		counter(filepath.Join(c.dir, "memory.memsw.failcnt"), "") > 0
}

// counter reads the value of key in a flat keyed file ("key value"
// lines), or the file's only number for key ""; -1 when absent.
func counter(file, key string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		var v string
		switch {
		case key == "" && len(f) == 1:
			v = f[0]
		case len(f) == 2 && f[0] == key:
			v = f[1]
		default:
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return -1
		}
		return n
	}
	return -1
}
