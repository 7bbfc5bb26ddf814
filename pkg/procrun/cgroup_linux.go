package procrun

import (
	"syscall"

	"github.com/agentsmithd/agentsmithd/pkg/runcg"
)

// startIn makes the command start inside g's cgroup v2 (clone3
// CLONE_INTO_CGROUP): no instant at which it, or anything it forks, runs
// outside.
func startIn(attr *syscall.SysProcAttr, g *runcg.Group) {
	if g.FD() < 0 {
		return // no cgroup v2 (a pure v1 host): only the v1 joins place it
	}
	attr.UseCgroupFD = true
	attr.CgroupFD = g.FD()
}
