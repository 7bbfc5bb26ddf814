package runcg

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Parent is where run cgroups are created: the daemon's own cgroup v2,
// and its cgroups in the v1 hierarchies of the controllers cgroup v2 does
// not have here (hybrid hosts keep memory and pids on v1).
type Parent struct {
	// dir is the daemon's cgroup v2; "" where there is none usable (a
	// pure v1 host), and then v2Err says why.
	dir   string
	v2Err error
	own   owner
	// v2 holds the controllers enabled in dir's cgroup.subtree_control:
	// those each run cgroup v2 gets.
	v2 map[string]bool
	// v1 are the daemon's cgroups in the v1 hierarchies of memory, pids,
	// cpu and freezer that are writable, one per hierarchy.
	v1 []hier
}

// hier is the daemon's cgroup in one cgroup v1 hierarchy.
type hier struct {
	ctrls []string // the controllers mounted there, of those runcg uses
	dir   string
}

// has reports whether h carries controller c.
func (h hier) has(c string) bool {
	for _, x := range h.ctrls {
		if x == c {
			return true
		}
	}
	return false
}

// limitCtrls are the controllers limits need; freezer only helps kill v1
// members.
var limitCtrls = []string{"memory", "pids", "cpu"}

// Detect finds the calling process's cgroup v2 and checks that a run
// cgroup can be created in it and killed with cgroup.kill; it also finds
// the controllers limits can use (Controllers). The error says why not
// (the daemon logs it and falls back). It changes nothing but run
// cgroups of gone daemons (the sweep): enabling controllers on cgroup v2
// is EnableLimits' business.
func Detect() (*Parent, error) {
	p, err := detect()
	if err != nil {
		return nil, err
	}
	if p.dir == "" {
		return nil, p.v2Err
	}
	return p, nil
}

// DetectLimits is Detect for a caller that wants limits even where cgroup
// v2 is not usable (a pure v1 host, or one whose cgroup2 is not
// writable): then the Parent has v1 controllers only, Kills is false, and
// a run's processes are in its cgroups only once joined (Group.Join), so
// such a Parent is no procrun Spec.Cgroups, which starts into Group.FD.
func DetectLimits() (*Parent, error) { return detect() }

func detect() (*Parent, error) {
	own, err := self()
	if err != nil {
		return nil, err
	}
	p := &Parent{own: own, v2: map[string]bool{}}
	p.dir, p.v2Err = v2Dir()
	if p.dir != "" {
		p.v2 = enabled(p.dir)
	}
	var missing []string
	p.v1, missing = v1Hiers(p.v2)
	if p.dir == "" && len(p.v1) == 0 {
		return nil, fmt.Errorf("%w; no writable cgroup v1 hierarchy for %s either", p.v2Err, strings.Join(missing, ", "))
	}
	p.sweep(time.Now())
	return p, nil
}

// v2Dir is the daemon's cgroup v2, where a run cgroup can be created and
// has cgroup.kill. When the daemon has moved itself to its leaf
// (EnableLimits), that is its parent.
func v2Dir() (string, error) {
	dir, err := ownDir()
	if err != nil {
		return "", err
	}
	if filepath.Base(dir) == leafName {
		dir = filepath.Dir(dir)
	}
	probe := filepath.Join(dir, fmt.Sprintf("%s%d-probe-%d", prefix, os.Getpid(), probes.Add(1)))
	if err := os.Mkdir(probe, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("create a cgroup in %s (needs write access: systemd Delegate=yes): %w", dir, err)
	}
	defer os.Remove(probe)
	if _, err := os.Stat(filepath.Join(probe, "cgroup.kill")); err != nil {
		return "", fmt.Errorf("cgroup.kill (Linux 5.14): %w", err)
	}
	return dir, nil
}

// Dir is where run cgroups v2 are created; "" without cgroup v2.
func (p *Parent) Dir() string { return p.dir }

// Kills reports whether run cgroups are cgroup v2 ones, into which a
// process is started (Group.FD) and which are killed at once: otherwise
// a run is in its cgroups only once joined, and is killed one process at
// a time.
func (p *Parent) Kills() bool { return p.dir != "" }

// JoinNeeded reports whether run groups have v1 cgroups a run's first
// process must join (Group.Join) before it starts anything: clone3
// CLONE_INTO_CGROUP puts a process in its cgroup v2 only.
func (p *Parent) JoinNeeded() bool { return len(p.v1) > 0 }

// ctrl says where controller c is: the daemon's cgroup v2 or v1 dir.
func (p *Parent) ctrl(c string) (dir string, v1, ok bool) {
	if p.v2[c] {
		return p.dir, false, true
	}
	for _, h := range p.v1 {
		if h.has(c) {
			return h.dir, true, true
		}
	}
	return "", false, false
}

// Controllers reports which limits run cgroups can enforce (memory,
// process count, CPU) and where, for the daemon's check command: where
// names each controller's cgroup (v2 or v1 and its directory), how runs
// are killed, and, for any missing, the fix.
func (p *Parent) Controllers() (mem, pids, cpu bool, where string) {
	var parts, missing []string
	have := map[string]bool{}
	for _, c := range limitCtrls {
		dir, v1, ok := p.ctrl(c)
		have[c] = ok
		switch {
		case !ok:
			missing = append(missing, c)
		case v1:
			parts = append(parts, fmt.Sprintf("%s: cgroup v1 %s", c, dir))
		default:
			parts = append(parts, fmt.Sprintf("%s: cgroup v2 %s", c, dir))
		}
	}
	if p.dir != "" {
		parts = append(parts, "kill: cgroup v2 cgroup.kill in "+p.dir)
	} else {
		parts = append(parts, fmt.Sprintf("kill: no cgroup v2 (%v), so no cgroup.kill: v1 members are killed one by one, "+
			"and a process is in a run's cgroups only once joined", p.v2Err))
	}
	if len(missing) > 0 {
		parts = append(parts, fmt.Sprintf("no %s controller: %s", strings.Join(missing, ", "), Fix))
	}
	return have["memory"], have["pids"], have["cpu"], strings.Join(parts, "; ")
}

// Missing says which of l's limits no controller can enforce, with the
// fix; nil when all hold.
func (p *Parent) Missing(l Limits) error {
	var miss []string
	check := func(set bool, c, what string) {
		if _, _, ok := p.ctrl(c); set && !ok {
			miss = append(miss, fmt.Sprintf("%s (no %s controller)", what, c))
		}
	}
	check(l.MemoryBytes > 0, "memory", "memory limit "+FormatBytes(l.MemoryBytes))
	check(l.Pids > 0, "pids", fmt.Sprintf("process limit %d", l.Pids))
	check(l.CPU > 0, "cpu", fmt.Sprintf("CPU limit %g cores", l.CPU))
	if len(miss) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s cannot hold: %s", ErrNoController, strings.Join(miss, ", "), Fix)
}

// sweep kills and removes the run cgroups of daemons that are gone (killed
// -9, crashed), v2 and v1 alike: their runs have no owner left, and
// whatever those runs started must not keep running. Only a cgroup whose
// owner is provably gone is killed: one of this process's pid namespace
// whose pid is free or belongs to a process with another start time. The
// cgroups of live daemons, this one's included, are left alone. Those
// whose owner cannot be told (another pid namespace sharing the cgroup,
// an unknown name) are removed only when empty, which rmdir itself checks
// (a populated cgroup is EBUSY), and older than staleAge, so that one
// just created is not taken from under its daemon.
func (p *Parent) sweep(now time.Time) {
	type found struct {
		g   Group
		mod time.Time
	}
	var names []string
	runs := map[string]*found{}
	scan := func(parent string, v1, freezer bool) {
		ents, _ := os.ReadDir(parent)
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), prefix) || !e.IsDir() {
				continue
			}
			f := runs[e.Name()]
			if f == nil {
				f = &found{g: Group{name: e.Name()}}
				if fi, err := e.Info(); err == nil {
					f.mod = fi.ModTime()
				}
				runs[e.Name()] = f
				names = append(names, e.Name())
			}
			dir := filepath.Join(parent, e.Name())
			switch {
			case !v1:
				f.g.dir = dir
			case freezer:
				f.g.freezer = dir
				f.g.v1 = append(f.g.v1, dir)
			default:
				f.g.v1 = append(f.g.v1, dir)
			}
		}
	}
	if p.dir != "" {
		scan(p.dir, false, false)
	}
	for _, h := range p.v1 {
		scan(h.dir, true, h.has("freezer"))
	}
	for _, name := range names {
		f := runs[name]
		o, ok := parseOwner(strings.TrimPrefix(name, prefix))
		switch {
		case ok && o.pid == p.own.pid && o.start == p.own.start && o.pidns == p.own.pidns:
			// This process's own runs, of another Parent.
		case ok && o.gone(p.own):
			_ = f.g.remove()
		case ok && o.pidns == p.own.pidns:
			// A live daemon's.
		default:
			if now.Sub(f.mod) > staleAge {
				for _, dir := range append([]string{f.g.dir}, f.g.v1...) {
					if dir != "" {
						_ = os.Remove(dir)
					}
				}
			}
		}
	}
}
