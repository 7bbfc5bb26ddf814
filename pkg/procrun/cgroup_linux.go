package procrun

import (
	"syscall"

	"github.com/agentsmithd/agentsmithd/pkg/runcg"
)

// startIn makes the command start inside g (clone3 CLONE_INTO_CGROUP):
// no instant at which it, or anything it forks, runs outside.
func startIn(attr *syscall.SysProcAttr, g *runcg.Group) {
	attr.UseCgroupFD = true
	attr.CgroupFD = g.FD()
}
