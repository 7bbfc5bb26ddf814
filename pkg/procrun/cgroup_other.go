//go:build !linux

package procrun

import (
	"syscall"

	"github.com/agentsmithd/agentsmithd/pkg/runcg"
)

// startIn does nothing: runcg.Parent.New never succeeds here.
func startIn(*syscall.SysProcAttr, *runcg.Group) {}
