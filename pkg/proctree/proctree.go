// Package proctree finds the process groups a process started, from /proc
// (Linux). The harnesses that kill a replica "like a node dies" use it to
// take its pipelines down with it: each pipeline is its own group leader
// whose parent is the daemon.
package proctree

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ChildGroups returns the process groups led by direct children of pid.
// Processes that vanish while /proc is read are skipped.
func ChildGroups(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		cpid, err := strconv.Atoi(e.Name())
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
		if len(f) < 3 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == pid {
			if pg, _ := strconv.Atoi(f[2]); pg == cpid {
				out = append(out, pg)
			}
		}
	}
	return out
}
