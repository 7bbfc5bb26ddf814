package runcg

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// leafName is the cgroup v2 the daemon moves its own processes to when it
// enables controllers for its runs, below the cgroup it was started in.
// A cgroup with processes cannot enable controllers for its children
// (the "no internal processes" rule), so the daemon's cgroup must hold
// only cgroups: this leaf and the runs'. Detect takes a daemon found in
// a cgroup of this name to be in its leaf, and creates runs beside it.
const leafName = "daemon"

// enabled reads the controllers enabled in dir's cgroup.subtree_control.
func enabled(dir string) map[string]bool {
	return words(filepath.Join(dir, "cgroup.subtree_control"))
}

// words reads a space-separated list file as a set.
func words(file string) map[string]bool {
	set := map[string]bool{}
	b, _ := os.ReadFile(file)
	for _, w := range strings.Fields(string(b)) {
		set[w] = true
	}
	return set
}

// EnableLimits enables the memory, pids and cpu controllers for run
// cgroups v2, those of them the daemon's cgroup has (cgroup.controllers)
// and has not yet enabled: systemd's Delegate=yes hands them to the
// daemon's cgroup, but enabling them in its cgroup.subtree_control is the
// daemon's business. As that is refused while the cgroup holds processes,
// the daemon's own processes are moved first to its leaf cgroup
// ("<cgroup>/daemon"), as delegation users do. Call it once, before runs
// start; Controllers then says what holds. It does nothing without cgroup
// v2 or where the controllers are bound to v1 (a hybrid host: NewLimited
// uses those there).
func (p *Parent) EnableLimits() error {
	if p.dir == "" {
		return nil
	}
	avail := words(filepath.Join(p.dir, "cgroup.controllers"))
	var want []string
	for _, c := range limitCtrls {
		if avail[c] && !p.v2[c] {
			want = append(want, c)
		}
	}
	if len(want) == 0 {
		return nil
	}
	err := enable(p.dir, want)
	p.v2 = enabled(p.dir)
	// A controller on v2 is on no v1 hierarchy; what v1Hiers found is
	// kept for the rest.
	var hs []hier
	for _, h := range p.v1 {
		keep := false
		for _, c := range h.ctrls {
			keep = keep || !p.v2[c]
		}
		if keep {
			hs = append(hs, h)
		}
	}
	p.v1 = hs
	return err
}

// enable enables controllers ctrls in dir's cgroup.subtree_control,
// moving dir's processes to its leaf first unless dir is a root cgroup
// (the only one allowed both processes and enabled controllers).
func enable(dir string, ctrls []string) error {
	if _, err := os.Stat(filepath.Join(dir, "cgroup.events")); err == nil {
		if err := toLeaf(dir, time.Now().Add(emptyTimeout)); err != nil {
			return err
		}
	}
	var errs []error
	for _, c := range ctrls {
		// One at a time, so that one refused does not keep the others off.
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+c), 0); err != nil {
			errs = append(errs, fmt.Errorf("enable the %s controller in %s: %w", c, dir, err))
		}
	}
	return errors.Join(errs...)
}

// toLeaf moves every process of cgroup dir to dir/leafName, until none is
// left (one may fork while the others move) or the deadline passes.
func toLeaf(dir string, deadline time.Time) error {
	leaf := filepath.Join(dir, leafName)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create the daemon's leaf cgroup: %w", err)
	}
	for {
		pids, err := procs(dir)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
			if err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("move process %d to %s: %w", pid, leaf, err)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("move the daemon's processes to %s: some keep appearing", leaf)
		}
	}
}
