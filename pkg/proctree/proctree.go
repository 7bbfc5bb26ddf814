// Package proctree reads the process tree from /proc (Linux). The
// harnesses that kill a replica "like a node dies" use it to take its
// pipelines down with it (each pipeline is its own group leader whose
// parent is the daemon); a run guard uses it to find the processes
// re-parented to it; tests use it to find every process of a run.
package proctree

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Proc is one process as /proc/PID/stat shows it.
type Proc struct {
	PID, PPID, PGID int
	State           byte // 'R', 'S', 'Z' (zombie), …
}

// List returns every process. Processes that vanish while /proc is read
// are skipped.
func List() []Proc {
	ents, _ := os.ReadDir("/proc")
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := stat(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// stat reads /proc/PID/stat; false when it is gone or hidden.
func stat(pid int) (Proc, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return Proc{}, false
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Proc{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return Proc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	pgid, _ := strconv.Atoi(f[2])
	return Proc{PID: pid, PPID: ppid, PGID: pgid, State: f[0][0]}, true
}

// OwnChildren returns the calling process's direct children, zombies
// included, from /proc/self/task/*/children (CONFIG_PROC_CHILDREN). A
// process's own /proc entry is visible to it whatever /proc hides from it
// (hidepid=invisible, systemd's ProtectProc=invisible), whereas List, and
// so Children, see no process of another user without CAP_SYS_PTRACE:
// a root run guard would find none of its run_as pipeline's processes.
// A child whose stat is hidden has only PID and PPID set (State 0). The
// error says the children files cannot be read; fall back to Children.
func OwnChildren() ([]Proc, error) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var out []Proc
	seen := map[int]bool{}
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", t.Name(), "children"))
		if errors.Is(err, fs.ErrNotExist) {
			if _, serr := os.Stat(filepath.Join("/proc/self/task", t.Name())); serr == nil {
				return nil, err // no CONFIG_PROC_CHILDREN
			}
			continue // the thread exited meanwhile
		}
		if err != nil {
			return nil, err
		}
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil || seen[pid] {
				continue
			}
			seen[pid] = true
			p, ok := stat(pid)
			switch {
			case !ok:
				p = Proc{PID: pid, PPID: self}
			case p.PPID != self:
				continue // reaped since, and the pid is another's now
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// ChildGroups returns the process groups led by direct children of pid.
func ChildGroups(pid int) []int {
	var out []int
	for _, p := range List() {
		if p.PPID == pid && p.PGID == p.PID {
			out = append(out, p.PID)
		}
	}
	return out
}

// Children returns the direct children of pid, zombies included.
func Children(pid int) []Proc {
	var out []Proc
	for _, p := range List() {
		if p.PPID == pid {
			out = append(out, p)
		}
	}
	return out
}

// WithEnv returns the live processes (zombies excluded) whose environment
// holds the entry env ("NAME=value"): how a test finds every process a run
// started, wherever they were re-parented, by a marker the run's
// environment carries. Environments that cannot be read (another user's,
// without privilege) are skipped.
func WithEnv(env string) []int {
	var out []int
	for _, p := range List() {
		if p.State == 'Z' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.PID), "environ"))
		if err == nil && slices.Contains(strings.Split(string(b), "\x00"), env) {
			out = append(out, p.PID)
		}
	}
	return out
}
