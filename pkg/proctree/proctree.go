// Package proctree reads the process tree from /proc (Linux). The
// harnesses that kill a replica "like a node dies" use it to take its
// pipelines down with it (each pipeline is its own group leader whose
// parent is the daemon); a run guard uses it to find the processes
// re-parented to it; tests use it to find every process of a run.
package proctree

import (
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
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || len(f[0]) != 1 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgid, _ := strconv.Atoi(f[2])
		out = append(out, Proc{PID: pid, PPID: ppid, PGID: pgid, State: f[0][0]})
	}
	return out
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
