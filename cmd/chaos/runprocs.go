package main

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentsmithd/agentsmithd/pkg/proctree"
)

// runKey is a run's key in the run log, as pipelineScript makes it: the
// first 12 characters of the random tail of its run token
// (lifecycle.OwnerToken: instance|source|millis|random), unique per run.
func runKey(token string) string {
	k := token[strings.LastIndexByte(token, '|')+1:]
	return k[:min(len(k), 12)]
}

// below returns the processes below pid in the host's process tree: a
// replica's run guards, the init of each run's sandbox (PID 1 of its
// namespace inside, a host pid here) and the pipelines below them, and the
// daemon's other children. A sandboxed pipeline is no child of the daemon,
// and leads a process group of its own, so what is below a replica is
// found by descent, not by the daemon's children's groups.
func below(pid int) []proctree.Proc {
	children := map[int][]proctree.Proc{}
	for _, p := range proctree.List() {
		children[p.PPID] = append(children[p.PPID], p)
	}
	var out []proctree.Proc
	next := []int{pid}
	for len(next) > 0 {
		p := next[0]
		next = next[1:]
		for _, c := range children[p] {
			out = append(out, c)
			next = append(next, c.PID)
		}
	}
	return out
}

// signalTree sends sig to every process below pid until no new one
// appears: to each process group led by one of them (a pipeline's
// children in its group included, however it forks meanwhile), and to
// each in another group by pid (never to a group led from outside the
// tree: the daemon's is the harness's). It returns what it signalled,
// groups and single processes, for the reverse signal.
func signalTree(pid int, sig syscall.Signal) (groups, procs []int) {
	for range 10 {
		ps := below(pid)
		in := map[int]bool{}
		for _, p := range ps {
			in[p.PID] = true
		}
		fresh := false
		for _, p := range ps {
			switch {
			case in[p.PGID]:
				if !slices.Contains(groups, p.PGID) {
					groups = append(groups, p.PGID)
					_ = syscall.Kill(-p.PGID, sig)
					fresh = true
				}
			case !slices.Contains(procs, p.PID):
				procs = append(procs, p.PID)
				_ = syscall.Kill(p.PID, sig)
				fresh = true
			}
		}
		if !fresh {
			break
		}
	}
	return groups, procs
}

// runProcs maps the run key of each run below pid (runKey of the
// AGENTSMITH_RUN_TOKEN in a process's environment, which the run guard,
// the sandbox's init and the pipeline all carry) to its processes' host
// pids. boxed keeps only those inside the run's sandbox, in a PID
// namespace of its own: the pipeline's side, not its guard.
func runProcs(pid int, boxed bool) map[string][]int {
	own, _ := os.Readlink("/proc/self/ns/pid")
	out := map[string][]int{}
	for _, p := range below(pid) {
		if p.State == 'Z' {
			continue
		}
		dir := "/proc/" + strconv.Itoa(p.PID)
		if ns, err := os.Readlink(dir + "/ns/pid"); boxed && (err != nil || ns == own) {
			continue
		}
		b, err := os.ReadFile(dir + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(b), "\x00") {
			if tok, ok := strings.CutPrefix(kv, "AGENTSMITH_RUN_TOKEN="); ok {
				out[runKey(tok)] = append(out[runKey(tok)], p.PID)
				break
			}
		}
	}
	return out
}
